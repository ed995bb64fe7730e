package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimitErrorNeverNilOnDenial(t *testing.T) {
	a := Limit{Name: "A", Window: time.Second, Max: 1}
	b := Limit{Name: "B", Window: time.Minute, Max: 1}
	reqs := []Request{{Limit: a}, {Limit: b}}

	require.Nil(t, Decisions{Allowed: true, Denied: -1}.LimitError(reqs))

	good := Decisions{Each: []Decision{{RetryAfter: time.Second}, {RetryAfter: time.Minute}}, Denied: 1}
	require.Equal(t, "B", good.LimitError(reqs).Limit.Name)

	// A custom limiter that reports a denial with a bad index still yields
	// a usable error.
	bad := Decisions{Each: []Decision{{}, {RetryAfter: time.Minute}}, Denied: 7}
	le := bad.LimitError(reqs)
	require.NotNil(t, le)
	require.Equal(t, "B", le.Limit.Name)
	require.NotEmpty(t, le.Error())
	require.NotNil(t, Decisions{}.LimitError(nil))
	require.NotEmpty(t, Decisions{}.LimitError(nil).Error())
}

func TestCheckCost(t *testing.T) {
	l := Limit{Name: "n", Window: time.Second, Max: 3}
	require.NoError(t, CheckCost(l, 3))
	require.ErrorIs(t, CheckCost(l, 0), ErrCostExceedsMax)
	require.ErrorIs(t, CheckCost(l, 4), ErrCostExceedsMax)
	tb := Limit{Name: "tb", Window: time.Second, Max: 3, Algorithm: TokenBucket, Burst: 10}
	require.NoError(t, CheckCost(tb, 10))
}
