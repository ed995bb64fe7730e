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

// permits is a PermitHold whose lease runs on the local clock: each
// successful renewal holds the permits for lease from when it was asked.
type permits struct {
	lease time.Duration
	// renew says what each renewal returns.
	renew func(n int) error

	// settleErr is what Settle returns.
	settleErr error

	mu      sync.Mutex
	until   time.Time
	renewed chan int
	n       int
}

func newPermits(lease time.Duration, renew func(n int) error) *permits {
	return &permits{lease: lease, renew: renew, until: time.Now().Add(lease), renewed: make(chan int, 100)}
}

// Settle returns settleErr.
func (p *permits) Settle(context.Context, ...int64) error { return p.settleErr }

func (p *permits) Renew(context.Context) error {
	sent := time.Now()
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	err := p.renew(n)
	if err == nil {
		p.mu.Lock()
		p.until = sent.Add(p.lease)
		p.mu.Unlock()
	}
	p.renewed <- n
	return err
}

func (p *permits) HeldUntil() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.until
}

// done waits for ctx to end, failing the test if it does not within a
// minute (a bound no correct run comes near).
func done(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(time.Minute):
		t.Fatal("the context was not cancelled")
		return nil
	}
}

func TestKeepRenewsWhileTheCallRuns(t *testing.T) {
	// A lease of seconds, renewed every third of it: only a stall of more
	// than two thirds of it could end the hold.
	p := newPermits(3*time.Second, func(int) error { return nil })
	ctx, stop := runtime.Keep(context.Background(), p)
	for want := 1; want <= 2; want++ {
		require.Equal(t, want, <-p.renewed)
	}
	require.NoError(t, ctx.Err(), "renewed permits are held")
	stop()
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	require.NotErrorIs(t, context.Cause(ctx), runtime.ErrPermitLost)
	select {
	case n := <-p.renewed:
		// A renewal under way when stop ran may still finish.
		require.Equal(t, 3, n)
	default:
	}
}

func TestKeepCancelsWhenAPermitIsGone(t *testing.T) {
	gone := errors.New("gone")
	p := newPermits(30*time.Millisecond, func(n int) error {
		if n == 2 {
			return errors.Join(runtime.ErrPermitLost, gone)
		}
		return nil
	})
	ctx, stop := runtime.Keep(context.Background(), p)
	defer stop()
	cause := done(t, ctx)
	require.ErrorIs(t, cause, runtime.ErrPermitLost)
	require.ErrorIs(t, cause, gone, "the cause is the renewal's error")
	require.Equal(t, 1, <-p.renewed)
	require.Equal(t, 2, <-p.renewed)
}

func TestKeepCancelsWhenNoRenewalIsConfirmed(t *testing.T) {
	down := errors.New("store down")
	p := newPermits(30*time.Millisecond, func(int) error { return down })
	ctx, stop := runtime.Keep(context.Background(), p)
	defer stop()
	cause := done(t, ctx)
	require.ErrorIs(t, cause, runtime.ErrPermitLost)
	require.False(t, time.Now().Before(p.HeldUntil()), "cancelled only once the lease passed")
	require.GreaterOrEqual(t, <-p.renewed, 1, "it tried to renew")
}

func TestKeepAfterTheLeasePassed(t *testing.T) {
	// A process paused between the admission and Keep: the call must not
	// start as if it held the permit.
	p := newPermits(time.Hour, func(int) error { return nil })
	p.until = time.Now().Add(-time.Second)
	ctx, stop := runtime.Keep(context.Background(), p)
	defer stop()
	require.ErrorIs(t, done(t, ctx), runtime.ErrPermitLost)
}

func TestKeepWithoutPermits(t *testing.T) {
	ctx := context.Background()
	kept, stop := runtime.Keep(ctx, settleOnly{})
	require.Equal(t, ctx, kept)
	stop()
}

func TestKeepThroughOperate(t *testing.T) {
	// Operate's Hold forwards renewals to the Hold it wraps.
	p := newPermits(time.Hour, func(int) error { return runtime.ErrPermitLost })
	lim := runtime.Operate(permitHolder{p}, runtime.WithObserver(discardObserver{}))
	h, err := runtime.Admit(context.Background(), lim, runtime.Request{Limit: runtime.Limit{Name: "c", Window: time.Hour, Max: 1, Algorithm: runtime.Concurrency}})
	require.NoError(t, err)
	ph, ok := h.(runtime.PermitHold)
	require.True(t, ok, "%T is no PermitHold", h)
	require.Equal(t, p.HeldUntil(), ph.HeldUntil())
	require.ErrorIs(t, ph.Renew(context.Background()), runtime.ErrPermitLost)
}

// settleOnly is a Hold without permits.
type settleOnly struct{}

func (settleOnly) Settle(context.Context, ...int64) error { return nil }

// permitHolder admits every call with its permits.
type permitHolder struct{ p *permits }

func (h permitHolder) Decide(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(reqs))}, nil
}

func (h permitHolder) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	ds, err := h.Decide(ctx, reqs...)
	return ds, h.p, err
}

func TestLimitErrorOfConcurrency(t *testing.T) {
	e := &runtime.LimitError{Limit: runtime.Limit{Name: "Exports", Window: time.Minute, Max: 2, Algorithm: runtime.Concurrency}}
	require.Equal(t, `ratelimit: "Exports" allows 2 calls in flight; retry once one ends`, e.Error())
}

// TestReleasedEvents: observers see each concurrency limit of a settled
// call released, with the permit's loss if it was lost, and a rate limit
// of the call unsettled only when the store failed.
func TestReleasedEvents(t *testing.T) {
	exports := runtime.Limit{Name: "exports", Window: time.Hour, Max: 2, Algorithm: runtime.Concurrency}
	hourly := runtime.Limit{Name: "hourly", Window: time.Hour, Max: 10}
	down := errors.New("store down")
	for _, tc := range []struct {
		name    string
		settle  error
		results map[string]int
	}{
		{"released", nil, map[string]int{"exports released": 1}},
		{"lost", runtime.ErrPermitLost, map[string]int{"exports released": 1}},
		{"store down", down, map[string]int{"exports released": 1, "hourly unsettled": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPermits(time.Hour, func(int) error { return nil })
			p.settleErr = tc.settle
			rec := &recorder{}
			lim := runtime.Operate(permitHolder{p}, runtime.WithObserver(rec))
			h, err := runtime.Admit(context.Background(), lim, runtime.Request{Limit: exports, Key: "k"}, runtime.Request{Limit: hourly, Key: "k"})
			require.NoError(t, err)
			rec.take()
			require.ErrorIs(t, h.Settle(context.Background(), 1, 1), tc.settle)
			evs := rec.take()
			require.Equal(t, tc.results, results(evs))
			for _, ev := range evs {
				if ev.Result == runtime.ResultReleased {
					require.Equal(t, runtime.SourceStore, ev.Source)
					require.ErrorIs(t, ev.Err, tc.settle)
				}
			}
		})
	}
}

// TestKeepSeesTheLeasePassWithoutItsTimer: a process paused past its lease
// resumes with the call's context ended, whether the method asks Err or
// Done first, before Keep's timer has run.
func TestKeepSeesTheLeasePassWithoutItsTimer(t *testing.T) {
	for _, ask := range []string{"Err", "Done"} {
		t.Run(ask, func(t *testing.T) {
			p := newPermits(time.Hour, func(int) error { return nil })
			ctx, stop := runtime.Keep(context.Background(), p)
			defer stop()
			require.NoError(t, ctx.Err())
			// The lease passes as a pause would let it, with the timers
			// still an hour away.
			p.mu.Lock()
			p.until = time.Now().Add(-time.Millisecond)
			p.mu.Unlock()
			if ask == "Done" {
				select {
				case <-ctx.Done():
				default:
					t.Fatal("Done is not closed")
				}
			}
			require.ErrorIs(t, ctx.Err(), context.Canceled)
			require.ErrorIs(t, context.Cause(ctx), runtime.ErrPermitLost)
		})
	}
}
