package ratelimitgrpc_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

var sendCode = runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}

func denial(l runtime.Limit, retryAfter time.Duration) *runtime.LimitError {
	return &runtime.LimitError{Limit: l, Decision: runtime.Decision{RetryAfter: retryAfter}}
}

func TestStatusOfDenial(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		msg        string
		retryDelay time.Duration
	}{
		{"a LimitError", denial(sendCode, 41200*time.Millisecond),
			"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 42 s.", 41200 * time.Millisecond},
		{"a wrapped LimitError", fmt.Errorf("sending the code: %w", denial(sendCode, 41200*time.Millisecond)),
			"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 42 s.", 41200 * time.Millisecond},
		{"a wait below a second shows as 1 s, and RetryInfo keeps it exact", denial(sendCode, time.Microsecond),
			"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 1 s.", time.Microsecond},
		{"whole seconds are not rounded further", denial(sendCode, 2*time.Second),
			"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 2 s.", 2 * time.Second},
		{"a negative wait is none", denial(sendCode, -time.Second),
			"Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 1 s.", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := ratelimitgrpc.Status(tc.err)
			require.True(t, ok)
			assert.Equal(t, codes.ResourceExhausted, st.Code())
			assert.Equal(t, tc.msg, st.Message())
			require.Len(t, st.Details(), 2, "RetryInfo and QuotaFailure")
			ri, ok := st.Details()[0].(*errdetails.RetryInfo)
			require.True(t, ok, "first detail %T", st.Details()[0])
			assert.Equal(t, tc.retryDelay, ri.GetRetryDelay().AsDuration())
			qf, ok := st.Details()[1].(*errdetails.QuotaFailure)
			require.True(t, ok, "second detail %T", st.Details()[1])
			require.Len(t, qf.GetViolations(), 1)
			assert.Equal(t, "Notifier.SendCode", qf.GetViolations()[0].GetSubject())
			assert.Equal(t, "Too many requests for Notifier.SendCode: at most 3 per 1m0s.", qf.GetViolations()[0].GetDescription())
			assert.Equal(t, int64(3), qf.GetViolations()[0].GetQuotaValue())
		})
	}
}

// TestStatusOfDenialWithoutLimit: what can still be said of a LimitError
// with an invalid Limit, or of an ErrLimited that is no LimitError.
func TestStatusOfDenialWithoutLimit(t *testing.T) {
	st, ok := ratelimitgrpc.Status(denial(runtime.Limit{}, 1500*time.Millisecond))
	require.True(t, ok)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	assert.Equal(t, "Too many requests. Retry in 2 s.", st.Message())
	require.Len(t, st.Details(), 1, "RetryInfo only: there is no limit to name")
	d, ok := ratelimitgrpc.RetryDelay(st.Err())
	require.True(t, ok)
	assert.Equal(t, 1500*time.Millisecond, d)

	st, ok = ratelimitgrpc.Status(fmt.Errorf("custom: %w", runtime.ErrLimited))
	require.True(t, ok)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	assert.Equal(t, "Too many requests. Retry later.", st.Message())
	assert.Empty(t, st.Details())
}

func TestStatusOfUnavailable(t *testing.T) {
	st, ok := ratelimitgrpc.Status(fmt.Errorf("redislimit: %s: %w", downCause, runtime.ErrUnavailable))
	require.True(t, ok)
	assert.Equal(t, codes.Unavailable, st.Code())
	assert.NotContains(t, st.Message(), "10.1.2.3")
	assert.Empty(t, st.Details())
}

func TestStatusOfOtherErrors(t *testing.T) {
	for _, err := range []error{
		nil,
		errors.New("mailer is down"),
		status.Error(codes.ResourceExhausted, "the server's own quota"),
		fmt.Errorf("bad cost: %w", runtime.ErrInvalidCost),
	} {
		st, ok := ratelimitgrpc.Status(err)
		assert.False(t, ok, "%v", err)
		assert.Nil(t, st, "%v", err)
	}
}

// TestStatusOfInFlightDenial: a concurrency limit's denial has no wait to
// give, so no RetryInfo, and RetryDelay finds none.
func TestStatusOfInFlightDenial(t *testing.T) {
	exports := runtime.Limit{Name: "Exports", Window: time.Minute, Max: 2, Algorithm: runtime.Concurrency}
	st, ok := ratelimitgrpc.Status(denial(exports, 0))
	require.True(t, ok)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	assert.Equal(t, "Too many requests in flight for Exports: at most 2 at once. Retry once one ends.", st.Message())
	require.Len(t, st.Details(), 1, "QuotaFailure alone")
	qf, ok := st.Details()[0].(*errdetails.QuotaFailure)
	require.True(t, ok, "detail %T", st.Details()[0])
	assert.Equal(t, int64(2), qf.GetViolations()[0].GetQuotaValue())
	_, ok = ratelimitgrpc.RetryDelay(st.Err())
	assert.False(t, ok)
}
