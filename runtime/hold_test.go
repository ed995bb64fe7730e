package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// holder is a Holder whose holds record how they were settled, and whose
// Peek and Reset record what they were asked.
type holder struct {
	mu sync.Mutex
	// allow is whether calls are admitted; fail is what Settle returns.
	allow bool
	fail  error
	// asked holds the requests of every call, settled the used values
	// of every Settle that took effect.
	asked   [][]runtime.Request
	settled [][]int64
}

func (h *holder) Decide(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, reqs)
	ds := runtime.Decisions{Allowed: h.allow, Each: make([]runtime.Decision, len(reqs))}
	for i := range ds.Each {
		ds.Each[i] = runtime.Decision{Allowed: h.allow, RetryAfter: time.Second}
		if h.allow {
			ds.Each[i].RetryAfter = 0
		}
	}
	return ds, nil
}

func (h *holder) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	ds, err := h.Decide(ctx, reqs...)
	if err != nil || !ds.Allowed {
		return ds, nil, err
	}
	return ds, &heldCall{h: h, reqs: reqs}, nil
}

func (h *holder) Peek(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	return h.Decide(ctx, reqs...)
}

func (h *holder) Reset(_ context.Context, reqs ...runtime.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, reqs)
	return nil
}

type heldCall struct {
	h    *holder
	reqs []runtime.Request
	once sync.Once
}

func (c *heldCall) Settle(_ context.Context, used ...int64) error {
	if err := runtime.ValidateSettle(c.reqs, used); err != nil {
		return err
	}
	err := runtime.ErrSettled
	c.once.Do(func() {
		c.h.mu.Lock()
		defer c.h.mu.Unlock()
		err = c.h.fail
		if err == nil {
			c.h.settled = append(c.h.settled, used)
		}
	})
	return err
}

// decideOnly hides every method of a Limiter but Decide.
type decideOnly struct{ runtime.Limiter }

var testLimit = runtime.Limit{Name: "Svc.Login", Window: time.Minute, Max: 5}

// TestAdmit: Admit returns a Hold for an admitted call, the *LimitError
// for a denied one, and a Hold that says why it cannot settle for a
// Limiter that is not a Holder.
func TestAdmit(t *testing.T) {
	h := &holder{allow: true}
	hold, err := runtime.Admit(ctx, h, runtime.Request{Limit: testLimit, Key: "a"})
	require.NoError(t, err)
	require.NoError(t, hold.Settle(ctx, 0))
	require.ErrorIs(t, hold.Settle(ctx, 0), runtime.ErrSettled)
	require.Equal(t, [][]int64{{0}}, h.settled)
	require.ErrorContains(t, hold.Settle(ctx, 1, 2), "settling a call of 1 limits with 2 used values")

	h.allow = false
	hold, err = runtime.Admit(ctx, h, runtime.Request{Limit: testLimit, Key: "a"})
	require.Nil(t, hold)
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "Svc.Login", le.Limit.Name)

	h.allow = true
	hold, err = runtime.Admit(ctx, decideOnly{h}, runtime.Request{Limit: testLimit, Key: "a"})
	require.NoError(t, err)
	require.ErrorIs(t, hold.Settle(ctx, 0), errors.ErrUnsupported)

	hold, err = runtime.Admit(ctx, h)
	require.NoError(t, err)
	require.NoError(t, hold.Settle(ctx))
	require.Len(t, h.settled, 1, "a call of no limits settles nothing")
}

// TestValidateSettle: one used value per request, none negative.
func TestValidateSettle(t *testing.T) {
	reqs := []runtime.Request{{Limit: testLimit}}
	require.NoError(t, runtime.ValidateSettle(reqs, []int64{0}))
	require.NoError(t, runtime.ValidateSettle(reqs, []int64{1 << 60}))
	require.ErrorIs(t, runtime.ValidateSettle(reqs, []int64{-1}), runtime.ErrInvalidCost)
	require.Error(t, runtime.ValidateSettle(reqs, nil))
}

// TestOperateHolds: an Operate limiter holds through its Holder with the
// overrides in force, tells its observers of a settlement that failed,
// and forwards Peek and Reset with overrides applied.
func TestOperateHolds(t *testing.T) {
	h := &holder{allow: true, fail: runtime.ErrUnavailable}
	var ov runtime.Overrides
	require.NoError(t, ov.Set(map[string]runtime.Override{"Svc.Login": {Max: 9}}))
	rec := &recorder{}
	lim := runtime.Operate(h, runtime.WithOverrides(&ov), runtime.WithObserver(rec))

	hold, err := runtime.Admit(ctx, lim, runtime.Request{Limit: testLimit, Key: "a", Cost: 2})
	require.NoError(t, err)
	require.Equal(t, 9, h.asked[0][0].Limit.Max, "held with the override")
	require.Equal(t, map[string]int{"Svc.Login allowed": 1}, results(rec.take()))

	require.ErrorIs(t, hold.Settle(ctx, 0), runtime.ErrUnavailable)
	evs := rec.take()
	require.Len(t, evs, 1)
	require.Equal(t, runtime.ResultUnsettled, evs[0].Result)
	require.Equal(t, int64(2), evs[0].Cost)
	require.Equal(t, 9, evs[0].Limit.Max)
	require.ErrorIs(t, evs[0].Err, runtime.ErrUnavailable)
	require.ErrorIs(t, hold.Settle(ctx, 0), runtime.ErrSettled)
	require.Empty(t, rec.take(), "a second Settle is no failure to report")

	_, err = runtime.Peek(ctx, lim, runtime.Request{Limit: testLimit, Key: "a"})
	require.NoError(t, err)
	require.NoError(t, runtime.Reset(ctx, lim, runtime.Request{Limit: testLimit, Key: "a"}))
	require.Len(t, h.asked, 3)
	require.Equal(t, 9, h.asked[1][0].Limit.Max, "peeked with the override")
	require.Equal(t, 9, h.asked[2][0].Limit.Max, "reset with the override")
	require.Empty(t, rec.take(), "a peek or a reset is no decision to observe")

	// A limiter without them says so, through Operate too.
	plain := runtime.Operate(decideOnly{h})
	_, err = runtime.Peek(ctx, plain, runtime.Request{Limit: testLimit, Key: "a"})
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.ErrorIs(t, runtime.Reset(ctx, plain, runtime.Request{Limit: testLimit, Key: "a"}), errors.ErrUnsupported)
	hold, err = runtime.Admit(ctx, plain, runtime.Request{Limit: testLimit, Key: "a"})
	require.NoError(t, err)
	require.ErrorIs(t, hold.Settle(ctx, 0), errors.ErrUnsupported)
}
