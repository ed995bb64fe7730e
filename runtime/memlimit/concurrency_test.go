package memlimit

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// concLimit returns a concurrency limit of max permits, each leased for a
// second.
func concLimit(max int) runtime.Limit {
	return runtime.Limit{Name: "conc", Window: time.Second, Max: max, Algorithm: runtime.Concurrency}
}

// mustPermits admits reqs through lim's Hold and returns its PermitHold.
func mustPermits(t *testing.T, lim *Limiter, reqs ...runtime.Request) runtime.PermitHold {
	t.Helper()
	h := mustHold(t, lim, reqs...)
	ph, ok := h.(runtime.PermitHold)
	require.True(t, ok, "%T is no PermitHold", h)
	return ph
}

// inUse returns how many permits of l the key holds, by Peek.
func inUse(t *testing.T, lim *Limiter, l runtime.Limit, key string) int {
	t.Helper()
	return l.Max - mustPeek(t, lim, runtime.Request{Limit: l, Key: key}).Each[0].Remaining
}

// denied asserts that a call on reqs is denied, and returns its Decisions.
func denied(t *testing.T, lim *Limiter, reqs ...runtime.Request) runtime.Decisions {
	t.Helper()
	ds, _ := tryHold(t, lim, false, reqs...)
	return ds
}

func TestConcurrencyAtMostMax(t *testing.T) {
	// Each goroutine counts its call in flight once admitted, and out
	// before settling: as the permit is held in between, the count never
	// exceeds Max.
	const max, workers, calls = 3, 16, 300
	lim := New()
	l := runtime.Limit{Name: "conc", Window: time.Minute, Max: max, Algorithm: runtime.Concurrency}
	var inFlight, peak, admitted atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				ds, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k"})
				if err != nil {
					t.Error(err)
					return
				}
				if !ds.Allowed {
					if ds.Each[0].RetryAfter != 0 || ds.Each[0].Remaining != 0 {
						t.Errorf("a denial says %+v", ds.Each[0])
					}
					continue
				}
				admitted.Add(1)
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if i%4 == 0 {
					if err := h.(runtime.PermitHold).Renew(ctx); err != nil {
						t.Error(err)
					}
				}
				inFlight.Add(-1)
				if err := h.Settle(ctx, 1); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, peak.Load(), int64(max))
	require.Positive(t, admitted.Load())
	require.Zero(t, inUse(t, lim, l, "k"), "every permit was released")
}

func TestConcurrencyDecisions(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(2)
	r := runtime.Request{Limit: l, Key: "k"}
	ds, _, err := lim.Hold(ctx, r)
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Second}, ds.Each[0])
	clock.Advance(300 * time.Millisecond)
	ds, _, err = lim.Hold(ctx, r)
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}, ds.Each[0])
	clock.Advance(300 * time.Millisecond)
	// Nothing predicts when a call ends: RetryAfter is 0, and ResetAfter
	// is when the last lease ends.
	ds = denied(t, lim, r)
	require.Equal(t, runtime.Decision{Allowed: false, Remaining: 0, ResetAfter: 700 * time.Millisecond}, ds.Each[0])

	_, _, err = lim.Hold(ctx, runtime.Request{Limit: l, Key: "k", Cost: 2})
	require.ErrorIs(t, err, runtime.ErrInvalidCost)
}

func TestConcurrencyLeaseExpires(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(2)
	r := runtime.Request{Limit: l, Key: "k"}
	old := []runtime.PermitHold{mustPermits(t, lim, r), mustPermits(t, lim, r)}
	denied(t, lim, r)

	clock.Advance(999 * time.Millisecond)
	require.Equal(t, 2, inUse(t, lim, l, "k"), "held through the lease")
	clock.Advance(time.Millisecond)
	require.Zero(t, inUse(t, lim, l, "k"), "no permit counts once its lease ended")
	fresh := mustPermits(t, lim, r)

	// The old holds find their permits gone, and release none of the
	// fresh one's.
	for _, h := range old {
		require.ErrorIs(t, h.Renew(ctx), runtime.ErrPermitLost)
		err := h.Settle(ctx, 1)
		require.ErrorIs(t, err, runtime.ErrPermitLost)
		require.ErrorContains(t, err, `"conc"`)
		require.NotContains(t, err.Error(), `"k"`, "an error names no key")
		require.ErrorIs(t, h.Settle(ctx, 1), runtime.ErrSettled)
	}
	require.Equal(t, 1, inUse(t, lim, l, "k"))
	require.NoError(t, fresh.Renew(ctx))
	require.NoError(t, fresh.Settle(ctx, 1))
	require.Zero(t, inUse(t, lim, l, "k"))
}

func TestConcurrencyRenewExtends(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(1)
	r := runtime.Request{Limit: l, Key: "k"}
	before := time.Now()
	h := mustPermits(t, lim, r)
	until := h.HeldUntil()
	require.False(t, until.Before(before.Add(time.Second)), "held for a lease from before the acquisition")
	require.False(t, until.After(time.Now().Add(time.Second)), "held for a lease from the acquisition on")

	for range 5 {
		clock.Advance(600 * time.Millisecond)
		require.NoError(t, h.Renew(ctx))
		require.False(t, h.HeldUntil().Before(until), "HeldUntil moved back")
		until = h.HeldUntil()
		ds := denied(t, lim, r)
		require.Equal(t, time.Second, ds.Each[0].ResetAfter, "the lease runs from the renewal")
	}
	clock.Advance(time.Second)
	err := h.Renew(ctx)
	require.ErrorIs(t, err, runtime.ErrPermitLost)
	require.Equal(t, until, h.HeldUntil(), "a failed renewal leaves HeldUntil")
	require.ErrorIs(t, h.Settle(ctx, 1), runtime.ErrPermitLost)
	require.ErrorIs(t, h.Renew(ctx), runtime.ErrPermitLost, "a settled call holds nothing")

	done, cancel := context.WithCancel(ctx)
	cancel()
	h = mustPermits(t, lim, r)
	require.ErrorIs(t, h.Renew(done), context.Canceled)
	require.NotErrorIs(t, h.Renew(done), runtime.ErrPermitLost)
}

func TestConcurrencyResetLosesPermits(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(1)
	r := runtime.Request{Limit: l, Key: "k"}
	old := mustPermits(t, lim, r)
	require.NoError(t, lim.Reset(ctx, r))
	require.Zero(t, inUse(t, lim, l, "k"))
	fresh := mustPermits(t, lim, r)

	require.ErrorIs(t, old.Renew(ctx), runtime.ErrPermitLost)
	require.ErrorIs(t, old.Settle(ctx, 0), runtime.ErrPermitLost)
	require.Equal(t, 1, inUse(t, lim, l, "k"), "the reset hold released the fresh permit")
	denied(t, lim, r)
	require.NoError(t, fresh.Renew(ctx))
	require.NoError(t, fresh.Settle(ctx, 0), "used 0 releases the permit too")
	require.Zero(t, inUse(t, lim, l, "k"))
}

func TestConcurrencyEvictionLosesPermits(t *testing.T) {
	// Under a small budget, keys nobody uses go, permits and all, once
	// the eviction hand has passed them twice; the
	// key's next entry numbers its permits from 1 again, and the old
	// Hold, which names its entry, releases none of them.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now), WithMaxMemory(64<<10))
	l := runtime.Limit{Name: "conc", Window: time.Hour, Max: 1, Algorithm: runtime.Concurrency}
	r := runtime.Request{Limit: l, Key: "k"}
	old := mustPermits(t, lim, r)
	e := (*hold)(old.(*permitHold)).lims[0].permit
	require.NotZero(t, e.w.v.Load()&wordVisited, "a key made by taking a permit counts as used")
	rate := runtime.Limit{Name: "flood", Window: time.Hour, Max: 1}
	full := false
	for i := 0; e.w.v.Load()&wordDead == 0; i++ {
		require.Less(t, i, 100_000, "the key with a permit was never evicted")
		ds, err := lim.Decide(ctx, runtime.Request{Limit: rate, Key: floodKey(i)}, runtime.Request{Limit: rate, Key: floodKey(i) + "+"})
		require.NoError(t, err)
		full = full || ds.Cause == ErrFull
	}
	require.True(t, full, "forgetting a live permit says ErrFull")
	require.Zero(t, inUse(t, lim, l, "k"))
	fresh := mustPermits(t, lim, r)

	require.ErrorIs(t, old.Renew(ctx), runtime.ErrPermitLost)
	require.ErrorIs(t, old.Settle(ctx, 1), runtime.ErrPermitLost)
	require.Equal(t, 1, inUse(t, lim, l, "k"))
	require.NoError(t, fresh.Settle(ctx, 1))
}

func TestConcurrencyMixedAllOrNothing(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	c := concLimit(1)
	rate := runtime.Limit{Name: "rate", Window: time.Minute, Max: 2, Algorithm: runtime.FixedWindow}
	call := []runtime.Request{{Limit: rate, Key: "k", Cost: 2}, {Limit: c, Key: "k"}}

	// Admitted: the rate limit charged, the permit taken.
	h := mustPermits(t, lim, call...)
	require.Equal(t, 1, inUse(t, lim, c, "k"))
	require.Zero(t, mustPeek(t, lim, runtime.Request{Limit: rate, Key: "k"}).Each[0].Remaining)

	// The concurrency limit is full: the rate limit is not charged.
	require.NoError(t, lim.Reset(ctx, call[0]))
	ds := denied(t, lim, call...)
	require.True(t, ds.Each[0].Allowed)
	require.False(t, ds.Each[1].Allowed)
	require.Equal(t, 2, mustPeek(t, lim, runtime.Request{Limit: rate, Key: "k"}).Each[0].Remaining)

	// Settling gives back the rate limit's unused units and releases the
	// permit, whatever used says of it.
	require.NoError(t, h.Settle(ctx, 1, 0))
	require.Zero(t, inUse(t, lim, c, "k"))

	// The rate limit is full: no permit is taken.
	mustHold(t, lim, call[0])
	ds = denied(t, lim, call...)
	require.False(t, ds.Each[0].Allowed)
	require.True(t, ds.Each[1].Allowed)
	require.Zero(t, inUse(t, lim, c, "k"))

	// A permit lost does not keep the call's rate limit from being settled.
	require.NoError(t, lim.Reset(ctx, call[0]))
	h = mustPermits(t, lim, call...)
	require.NoError(t, lim.Reset(ctx, call[1]))
	require.ErrorIs(t, h.Settle(ctx, 0, 1), runtime.ErrPermitLost)
	require.Equal(t, 2, mustPeek(t, lim, runtime.Request{Limit: rate, Key: "k"}).Each[0].Remaining, "the rate limit was settled")
}

func TestConcurrencyRenewAllOrNothing(t *testing.T) {
	// A call holding permits of two keys: when one is gone, the other is
	// not renewed either. Many keys, so that some pairs share a shard
	// and others do not.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	a, b := concLimit(1), concLimit(1)
	b.Name = "conc2"
	b.Window = 2 * time.Second
	for i := range 20 {
		ka, kb := "a"+strconv.Itoa(i), "b"+strconv.Itoa(i)
		h := mustPermits(t, lim, runtime.Request{Limit: a, Key: ka}, runtime.Request{Limit: b, Key: kb})
		start := time.Now()
		require.False(t, h.HeldUntil().After(start.Add(time.Second)), "the shortest lease counts")
		clock.Advance(500 * time.Millisecond)
		require.NoError(t, h.Renew(ctx))
		require.Equal(t, time.Second, denied(t, lim, runtime.Request{Limit: a, Key: ka}).Each[0].ResetAfter)
		require.Equal(t, 2*time.Second, denied(t, lim, runtime.Request{Limit: b, Key: kb}).Each[0].ResetAfter)

		require.NoError(t, lim.Reset(ctx, runtime.Request{Limit: a, Key: ka}))
		clock.Advance(500 * time.Millisecond)
		require.ErrorIs(t, h.Renew(ctx), runtime.ErrPermitLost)
		require.Equal(t, 1500*time.Millisecond, denied(t, lim, runtime.Request{Limit: b, Key: kb}).Each[0].ResetAfter, "the other permit was renewed")
		err := h.Settle(ctx, 1, 1)
		require.ErrorIs(t, err, runtime.ErrPermitLost)
		require.ErrorContains(t, err, `"conc"`)
		require.NotContains(t, err.Error(), `"conc2"`, "only the lost permit is reported")
		require.Zero(t, inUse(t, lim, b, kb), "the other permit was released")
	}
}

func TestConcurrencyModes(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(1)
	shadow, off := l, l
	shadow.Mode, off.Mode = runtime.ModeShadow, runtime.ModeOff

	// A shadow limit takes a permit while one is free, and never denies.
	h := mustPermits(t, lim, runtime.Request{Limit: shadow, Key: "k"})
	require.Equal(t, 1, inUse(t, lim, l, "k"))
	denied(t, lim, runtime.Request{Limit: l, Key: "k"})
	ds, h2, err := lim.Hold(ctx, runtime.Request{Limit: shadow, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.False(t, ds.Each[0].Allowed, "it had no room")
	_, ok := h2.(runtime.PermitHold)
	require.False(t, ok, "a shadow call without room holds no permit")
	require.NoError(t, h2.Settle(ctx, 1))
	require.Equal(t, 1, inUse(t, lim, l, "k"))
	require.NoError(t, h.Settle(ctx, 1))
	require.Zero(t, inUse(t, lim, l, "k"))

	// An off limit takes nothing, however many calls run.
	for range 3 {
		ds, h, err := lim.Hold(ctx, runtime.Request{Limit: off, Key: "k"})
		require.NoError(t, err)
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 1}, ds.Each[0])
		_, ok := h.(runtime.PermitHold)
		require.False(t, ok)
	}
	require.Zero(t, inUse(t, lim, l, "k"))
	require.Equal(t, 1, lim.Len(), "the off limit added no key")
}

func TestConcurrencyLowerMax(t *testing.T) {
	// A lower Max, as an override sets it, takes no permit away: it
	// refuses new ones until fewer than it are held.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(3)
	var hs []runtime.PermitHold
	for range 3 {
		hs = append(hs, mustPermits(t, lim, runtime.Request{Limit: l, Key: "k"}))
	}
	lower := l
	lower.Max = 1
	r := runtime.Request{Limit: lower, Key: "k"}
	require.Zero(t, mustPeek(t, lim, r).Each[0].Remaining)
	denied(t, lim, r)
	for _, h := range hs {
		require.NoError(t, h.Renew(ctx), "the permits held stay")
	}
	require.NoError(t, hs[0].Settle(ctx, 1))
	denied(t, lim, r)
	require.NoError(t, hs[1].Settle(ctx, 1))
	denied(t, lim, r)
	require.NoError(t, hs[2].Settle(ctx, 1))
	mustPermits(t, lim, r)
	denied(t, lim, r)
}

func TestConcurrencyPeekAndReset(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(3)
	r := runtime.Request{Limit: l, Key: "k"}
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 3}, mustPeek(t, lim, r).Each[0])
	require.Zero(t, lim.Len(), "a peek adds no key")
	mustPermits(t, lim, r)
	clock.Advance(100 * time.Millisecond)
	mustPermits(t, lim, r)
	want := runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Second}
	for range 3 {
		require.Equal(t, want, mustPeek(t, lim, r).Each[0], "a peek changes nothing")
	}
	// Peek does not drop an expired permit, and does not count it.
	clock.Advance(950 * time.Millisecond)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 2, ResetAfter: 50 * time.Millisecond}, mustPeek(t, lim, r).Each[0])
	require.Len(t, stateOf[concurrency](lim.entryOf(t, r)).permits, 2)

	require.NoError(t, lim.Reset(ctx, r))
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 3}, mustPeek(t, lim, r).Each[0])
	for range 3 {
		mustPermits(t, lim, r)
	}
	denied(t, lim, r)
}

// entryOf returns the entry of r's key; the test must hold nothing else.
func (m *Limiter) entryOf(t *testing.T, r runtime.Request) *entry {
	t.Helper()
	var d keyDigests
	s, h, k := m.locate(r, &d)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tab.Load().find(h, &k)
	require.NotNil(t, e)
	return e
}

func TestConcurrencyNeedsHold(t *testing.T) {
	lim := New(WithClock(newFakeClock().Now))
	rate := runtime.Limit{Name: "rate", Window: time.Minute, Max: 5}
	for _, mode := range []runtime.Mode{runtime.ModeEnforce, runtime.ModeShadow, runtime.ModeOff} {
		l := concLimit(1)
		l.Mode = mode
		r := runtime.Request{Limit: l, Key: "someone@example.com"}
		for _, decide := range []func() error{
			func() error { _, err := lim.Decide(ctx, r); return err },
			func() error {
				_, err := lim.Decide(ctx, runtime.Request{Limit: rate, Key: "k"}, r)
				return err
			},
			func() error { _, err := lim.Allow(ctx, l, r.Key); return err },
			func() error { return runtime.Enforce(ctx, lim, r) },
		} {
			err := decide()
			require.ErrorContains(t, err, "a concurrency limit, which needs Hold: call runtime.Admit")
			require.ErrorContains(t, err, `"conc"`)
			require.NotContains(t, err.Error(), r.Key)
		}
	}
	require.Zero(t, lim.Len(), "nothing was recorded")
}

func TestConcurrencyMemory(t *testing.T) {
	// A key is charged its permits as they are taken, and given back
	// what it shrinks by as they are released; once their leases end, a
	// sweep forgets it.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(1000)
	r := runtime.Request{Limit: l, Key: "k"}
	base := memoryCharged(lim)
	var hs []runtime.Hold
	for range 1000 {
		hs = append(hs, mustPermits(t, lim, r))
	}
	denied(t, lim, r)
	e := lim.entryOf(t, r)
	require.Equal(t, 1000, cap(stateOf[concurrency](e).permits), "at most Max permits")
	held := memoryCharged(lim) - base
	require.GreaterOrEqual(t, held, 1000*permitBytes)
	for _, h := range hs[:995] {
		require.NoError(t, h.Settle(ctx, 1))
	}
	require.LessOrEqual(t, cap(stateOf[concurrency](e).permits), 20)
	require.Less(t, memoryCharged(lim)-base, held-900*permitBytes)

	clock.Advance(time.Second)
	require.Zero(t, lim.sweep(), "a key whose leases all ended is forgotten")
	for i := range lim.shards {
		require.Zero(t, lim.shards[i].grown.Load())
	}
	for _, h := range hs[995:] {
		require.ErrorIs(t, h.Settle(ctx, 1), runtime.ErrPermitLost)
	}
	for i := range lim.shards {
		require.Zero(t, lim.shards[i].grown.Load(), "settling a forgotten permit charges nothing")
	}
}

func TestConcurrencySweepKeepsLivePermits(t *testing.T) {
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := concLimit(1)
	h := mustPermits(t, lim, runtime.Request{Limit: l, Key: "k"})
	for range 5 {
		clock.Advance(900 * time.Millisecond)
		require.NoError(t, h.Renew(ctx))
		lim.sweep()
		require.Equal(t, 1, lim.Len(), "a key with a live permit stays")
	}
	require.NoError(t, h.Settle(ctx, 1))
	lim.sweep()
	require.Zero(t, lim.Len(), "a key whose permits are all released goes")
}

func TestConcurrencyConcurrentRenewResetSettle(t *testing.T) {
	// Renewals, releases, resets and holds of several keys at once, for
	// -race; at the end every permit is released or forgotten.
	lim := New()
	a, b := concLimit(2), concLimit(3)
	b.Name = "conc2"
	a.Window, b.Window = time.Minute, time.Minute
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				ka, kb := "a"+strconv.Itoa(i%3), "b"+strconv.Itoa((i+g)%4)
				if i%17 == g {
					if err := lim.Reset(ctx, runtime.Request{Limit: a, Key: ka}); err != nil {
						t.Error(err)
					}
				}
				ds, h, err := lim.Hold(ctx, runtime.Request{Limit: a, Key: ka}, runtime.Request{Limit: b, Key: kb})
				if err != nil || !ds.Allowed {
					if err != nil {
						t.Error(err)
					}
					continue
				}
				ph := h.(runtime.PermitHold)
				if err := ph.Renew(ctx); err != nil && !errorsIsLost(err) {
					t.Error(err)
				}
				if err := ph.Settle(ctx, 1, 1); err != nil && !errorsIsLost(err) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for i := range 4 {
		require.Zero(t, inUse(t, lim, a, "a"+strconv.Itoa(i)))
		require.Zero(t, inUse(t, lim, b, "b"+strconv.Itoa(i)))
	}
}

func errorsIsLost(err error) bool { return errors.Is(err, runtime.ErrPermitLost) }

// permitEnds returns when the leases of r's key's permits end, in µs on
// lim's clock.
func (m *Limiter) permitEnds(t *testing.T, r runtime.Request) []int64 {
	t.Helper()
	e := m.entryOf(t, r)
	// The entry's lock keeps out renewals and releases, which change
	// the permits under it.
	require.True(t, e.w.lock(), "the entry was evicted")
	defer e.w.unlock()
	var ends []int64
	for _, p := range stateOf[concurrency](e).permits {
		ends = append(ends, p.until)
	}
	return ends
}

// cancelled waits for ctx to end, failing the test if it does not within a
// minute (a bound no correct run comes near), and returns its cause.
func cancelled(t *testing.T, ctx context.Context) error {
	t.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	select {
	case <-ctx.Done():
	case <-timeout.C:
	}
	require.Error(t, ctx.Err(), "the context was not cancelled within a minute")
	return context.Cause(ctx)
}

func TestConcurrencyKeep(t *testing.T) {
	// On the limiter's own clock, with a lease of seconds that Keep
	// renews every second: only a stall of two seconds could lose it.
	lim := New()
	l := runtime.Limit{Name: "conc", Window: 3 * time.Second, Max: 1, Algorithm: runtime.Concurrency}
	r := runtime.Request{Limit: l, Key: "k"}
	h, err := runtime.Admit(ctx, lim, r)
	require.NoError(t, err)
	ph := h.(runtime.PermitHold)
	first, until := lim.permitEnds(t, r)[0], ph.HeldUntil()
	kept, stop := runtime.Keep(ctx, h)
	defer stop()

	// Wait for a renewal to reach the limiter.
	for deadline := time.Now().Add(time.Minute); lim.permitEnds(t, r)[0] <= first; {
		require.NoError(t, kept.Err(), "the permit was lost before a renewal: did the machine stall?")
		require.True(t, time.Now().Before(deadline), "no renewal")
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, ph.HeldUntil().After(until), "HeldUntil moved on")
	require.Len(t, lim.permitEnds(t, r), 1)
	_, err = runtime.Admit(ctx, lim, r)
	require.ErrorIs(t, err, runtime.ErrLimited, "the permit is held")

	// A reset takes the permit: the next renewal finds it gone, and Keep
	// cancels the call.
	require.NoError(t, lim.Reset(ctx, r))
	require.ErrorIs(t, cancelled(t, kept), runtime.ErrPermitLost)
	stop()
	require.ErrorIs(t, h.Settle(ctx, 1), runtime.ErrPermitLost)

	// A call that ends in time: stopped, then settled.
	h, err = runtime.Admit(ctx, lim, r)
	require.NoError(t, err)
	kept, stop = runtime.Keep(ctx, h)
	stop()
	require.ErrorIs(t, context.Cause(kept), context.Canceled)
	require.NoError(t, h.Settle(ctx, 1))
	require.Empty(t, lim.permitEnds(t, r))
}

func TestConcurrencyKeepLeaseEndsInTheStore(t *testing.T) {
	// The test clock runs past the lease at once, as a store that lost
	// the renewals' time would: Keep's first renewal finds the permit
	// gone.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	l := runtime.Limit{Name: "conc", Window: 3 * time.Second, Max: 1, Algorithm: runtime.Concurrency}
	h, err := runtime.Admit(ctx, lim, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	kept, stop := runtime.Keep(ctx, h)
	defer stop()
	clock.Advance(3 * time.Second)
	cause := cancelled(t, kept)
	require.ErrorIs(t, cause, runtime.ErrPermitLost)
	require.ErrorContains(t, cause, "ended without a renewal")
	mustPermits(t, lim, runtime.Request{Limit: l, Key: "k"})
}
