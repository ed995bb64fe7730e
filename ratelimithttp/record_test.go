package ratelimithttp_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// The recording limiter changes nothing about the calls it passes on:
// costs, several limits in one call (all or nothing) and errors are the
// wrapped limiter's, and only decisions are recorded.
func TestRecordDecisionsPassesCallsThrough(t *testing.T) {
	_, mem := newManualLimiter()
	lim := ratelimithttp.RecordDecisions(mem)
	a := runtime.Limit{Name: "a", Window: time.Minute, Max: 2}
	b := runtime.Limit{Name: "b", Window: time.Minute, Max: 1}
	both := []runtime.Request{{Limit: a, Key: "k"}, {Limit: b, Key: "k"}}

	var costly, first, second runtime.Decisions
	h := ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		costly, err = lim.Decide(r.Context(), runtime.Request{Limit: sendCodeLimit, Key: "k", Cost: 2})
		require.NoError(t, err)

		// A cost above the capacity is an error, not a decision: the
		// fields keep the costly call's decision.
		_, err = lim.Decide(r.Context(), runtime.Request{Limit: sendCodeLimit, Key: "k", Cost: 4})
		require.ErrorIs(t, err, runtime.ErrInvalidCost)

		first, err = lim.Decide(r.Context(), both...)
		require.NoError(t, err)
		second, err = lim.Decide(r.Context(), both...)
		require.NoError(t, err)
		_, _ = io.WriteString(w, "ok")
	}))
	resp := sent(t, h, sendCodeRequest("k"))

	assert.True(t, costly.Allowed)
	assert.Equal(t, 1, costly.Each[0].Remaining, "a cost of 2 takes 2 units")
	require.True(t, first.Allowed)
	require.False(t, second.Allowed)
	assert.Equal(t, []runtime.Decision{
		{Allowed: true, Remaining: 1, ResetAfter: time.Minute},
		{Allowed: false, Remaining: 0, RetryAfter: time.Minute, ResetAfter: time.Minute},
	}, second.Each, "the denied call took nothing from a, and says so")
	// The sliding log logs a call's units at the call's time, so the quota
	// of the cost-2 call is full again after the window, 60s.
	assert.Equal(t, []string{`"Notifier.SendCode";r=1;t=60`, `"a";r=1;t=60`, `"b";r=0;t=60`}, resp.Header.Values("RateLimit"))

	d, err := mem.Allow(context.Background(), a, "k")
	require.NoError(t, err)
	assert.True(t, d.Allowed, "the denied call consumed a unit of a")
	assert.Equal(t, 0, d.Remaining)
}

// metrics is the usual Go wrapper of an interface, by embedding; with one
// method in runtime.Limiter it is complete, and recording works through it
// for one limit, a cost and several limits.
type metrics struct {
	runtime.Limiter
	calls atomic.Int32
}

func (m *metrics) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	m.calls.Add(1)
	return m.Limiter.Decide(ctx, reqs...)
}

func TestRecordDecisionsAroundAUserWrapper(t *testing.T) {
	_, mem := newManualLimiter()
	m := &metrics{Limiter: mem}
	lim := ratelimithttp.RecordDecisions(m)
	other := runtime.Limit{Name: "other", Window: time.Hour, Max: 10}
	h := ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, runtime.Enforce(r.Context(), lim, runtime.Request{Limit: sendCodeLimit, Key: "k"}))
		require.NoError(t, runtime.Enforce(r.Context(), lim, runtime.Request{Limit: sendCodeLimit, Key: "k", Cost: 2}))
		require.NoError(t, runtime.Enforce(r.Context(), lim,
			runtime.Request{Limit: login, Key: "k"}, runtime.Request{Limit: other, Key: "k", Cost: 3}))
		_, _ = io.WriteString(w, "ok")
	}))
	resp := sent(t, h, sendCodeRequest("k"))
	assert.Equal(t, int32(3), m.calls.Load())
	// The second call on Notifier.SendCode, in the first one's
	// microsecond, is recorded 1µs later, which rounds up to 61; a cost of 3
	// ends with the window.
	assert.Equal(t, []string{`"Notifier.SendCode";r=0;t=61`, `"api.login";r=2;t=60`, `"other";r=7;t=3600`},
		resp.Header.Values("RateLimit"))
}

// inconsistentLimiter answers without one decision per request.
type inconsistentLimiter struct{}

func (inconsistentLimiter) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{Allowed: true}, nil
}

func TestRecordDecisionsSkipsAnswersWithoutOneDecisionPerRequest(t *testing.T) {
	lim := ratelimithttp.RecordDecisions(inconsistentLimiter{})
	h := ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, runtime.Enforce(r.Context(), lim, runtime.Request{Limit: sendCodeLimit, Key: "k"}))
		_, _ = io.WriteString(w, "ok")
	}))
	resp := sent(t, h, sendCodeRequest("k"))
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Values("RateLimit"))
}

func TestRecordDecisionsRefusesNilAndWrapsOnce(t *testing.T) {
	assert.PanicsWithValue(t, "ratelimithttp: RecordDecisions: nil Limiter; pass e.g. memlimit.New()",
		func() { ratelimithttp.RecordDecisions(nil) })

	lim := ratelimithttp.RecordDecisions(memlimit.New())
	assert.Equal(t, lim, ratelimithttp.RecordDecisions(lim), "wrapping twice would record twice")
}
