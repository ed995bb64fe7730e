package memlimit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// holdLimit returns a limit of algo with Max 4 per second, Burst 6 for the
// token bucket and GCRA.
func holdLimit(algo runtime.Algorithm) runtime.Limit {
	l := runtime.Limit{Name: "hold", Window: time.Second, Max: 4, Algorithm: algo}
	if algo == runtime.TokenBucket || algo == runtime.GCRA {
		l.Burst = 6
	}
	return l
}

// tryHold decides reqs through lim's Hold, which must admit the call, and
// return a Hold, exactly when admit says.
func tryHold(t *testing.T, lim *Limiter, admit bool, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold) {
	t.Helper()
	ds, h, err := lim.Hold(ctx, reqs...)
	require.NoError(t, err)
	require.Equal(t, admit, ds.Allowed, "%v", ds)
	require.Equal(t, admit, h != nil, "Hold %v", h)
	return ds, h
}

// mustHold admits reqs through lim's Hold and returns the Hold.
func mustHold(t *testing.T, lim *Limiter, reqs ...runtime.Request) runtime.Hold {
	t.Helper()
	_, h := tryHold(t, lim, true, reqs...)
	return h
}

func mustPeek(t *testing.T, lim *Limiter, reqs ...runtime.Request) runtime.Decisions {
	t.Helper()
	ds, err := lim.Peek(ctx, reqs...)
	require.NoError(t, err)
	return ds
}

func TestHoldSettleTwice(t *testing.T) {
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			clock := newFakeClock()
			lim := New(WithClock(clock.Now))
			l := holdLimit(algo)
			r := runtime.Request{Limit: l, Key: "k", Cost: 3}
			h := mustHold(t, lim, r)
			before := mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"})
			require.NoError(t, h.Settle(ctx, 1))
			after := mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"})
			require.Equal(t, before.Each[0].Remaining+2, after.Each[0].Remaining, "2 units given back")

			for _, used := range []int64{0, 3, 100} {
				require.ErrorIs(t, h.Settle(ctx, used), runtime.ErrSettled)
				require.Equal(t, after, mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"}), "a second Settle changed the key")
			}
		})
	}
}

func TestHoldSettleInvalid(t *testing.T) {
	lim := New(WithClock(newFakeClock().Now))
	l := holdLimit(runtime.SlidingLog)
	o := runtime.Limit{Name: "other", Window: time.Minute, Max: 2}
	h := mustHold(t, lim, runtime.Request{Limit: l, Key: "k", Cost: 4}, runtime.Request{Limit: o, Key: "k"})
	require.Equal(t, 0, mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"}).Each[0].Remaining)

	err := h.Settle(ctx, 1)
	require.ErrorContains(t, err, "2 limits with 1 used values")
	require.Error(t, h.Settle(ctx, 1, 2, 3))
	err = h.Settle(ctx, 1, -1)
	require.ErrorIs(t, err, runtime.ErrInvalidCost)
	require.ErrorContains(t, err, `"other"`)
	require.Equal(t, 0, mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"}).Each[0].Remaining, "a failed Settle gave back")

	// None of them was the settlement, which a done context does not stop.
	done, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, h.Settle(done, 1, 1))
	require.Equal(t, 3, mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"}).Each[0].Remaining)
	require.ErrorIs(t, h.Settle(ctx, 1, 1), runtime.ErrSettled)
}

func TestHoldDenied(t *testing.T) {
	for _, algo := range runtime.Algorithms() {
		lim := New(WithClock(newFakeClock().Now))
		l := holdLimit(algo)
		full := runtime.Request{Limit: l, Key: "k", Cost: int64(l.Capacity())}
		mustHold(t, lim, full)
		for _, reqs := range [][]runtime.Request{
			{{Limit: l, Key: "k"}},
			{{Limit: l, Key: "k"}, {Limit: holdLimit(runtime.GCRA), Key: "other"}},
		} {
			ds, h, err := lim.Hold(ctx, reqs...)
			require.NoError(t, err)
			require.False(t, ds.Allowed, algo)
			require.Nil(t, h, algo)
		}
		// A shadow limit without room admits the call, records nothing,
		// and its settlement leaves it as it is.
		shadow := l
		shadow.Mode = runtime.ModeShadow
		before := mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"})
		h := mustHold(t, lim, runtime.Request{Limit: shadow, Key: "k"})
		require.NoError(t, h.Settle(ctx, 0))
		require.Equal(t, before, mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"}), algo)
	}
}

func TestHoldOffIsNotSettled(t *testing.T) {
	lim := New(WithClock(newFakeClock().Now))
	l := holdLimit(runtime.FixedWindow)
	off := l
	off.Mode = runtime.ModeOff
	mustHold(t, lim, runtime.Request{Limit: l, Key: "k", Cost: 2})
	h := mustHold(t, lim, runtime.Request{Limit: off, Key: "k", Cost: 2})
	require.NoError(t, h.Settle(ctx, 4))
	require.Equal(t, 2, mustPeek(t, lim, runtime.Request{Limit: l, Key: "k"}).Each[0].Remaining)
	require.Equal(t, 1, lim.Len())
}

func TestPeekRecordsNothing(t *testing.T) {
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			lim := New(WithClock(newFakeClock().Now))
			l := holdLimit(algo)
			long := strings.Repeat("k", 2*maxLiteralLen)
			other := runtime.Limit{Name: "other", Window: time.Minute, Max: 1, Mode: runtime.ModeShadow}
			off := runtime.Limit{Name: "off", Window: time.Minute, Max: 9, Mode: runtime.ModeOff}
			for _, key := range []string{"k", long} {
				reqs := []runtime.Request{{Limit: l, Key: key, Cost: 2}, {Limit: other, Key: key}, {Limit: off, Key: key}}
				n := lim.Len()
				ds := mustPeek(t, lim, reqs...)
				require.Equal(t, n, lim.Len(), "a peek at an unknown key added it")
				mustPeek(t, lim, reqs[0])
				require.Equal(t, n, lim.Len(), "a lone peek at an unknown key added it")
				want, err := New(WithClock(newFakeClock().Now)).Decide(ctx, reqs...)
				require.NoError(t, err)
				want.Each[0].Remaining += 2 // Decide recorded the call, Peek not.
				want.Each[1].Remaining++
				want.Each[0].ResetAfter, want.Each[1].ResetAfter = 0, 0
				require.Equal(t, want, ds)
				require.Equal(t, ds, mustPeek(t, lim, reqs...))

				// On a held key too, over and over.
				mustHold(t, lim, runtime.Request{Limit: l, Key: key, Cost: int64(l.Capacity()) - 1})
				n = lim.Len()
				one := runtime.Request{Limit: l, Key: key}
				for range 3 {
					require.True(t, mustPeek(t, lim, one).Allowed)
				}
				require.Equal(t, n, lim.Len())
				require.True(t, mustHold(t, lim, one) != nil)
				ds = mustPeek(t, lim, one)
				require.False(t, ds.Allowed)
				require.Positive(t, ds.Each[0].RetryAfter)
			}
		})
	}
}

func TestResetFullKey(t *testing.T) {
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			lim := New(WithClock(newFakeClock().Now))
			l := holdLimit(algo)
			long := strings.Repeat("r", 2*maxLiteralLen)
			for _, key := range []string{"k", long} {
				full := runtime.Request{Limit: l, Key: key, Cost: int64(l.Capacity())}
				h := mustHold(t, lim, full)
				// Charged past its capacity: a key settled above Max.
				require.NoError(t, h.Settle(ctx, 100))
				ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: key})
				require.NoError(t, err)
				require.False(t, ds.Allowed)

				require.NoError(t, lim.Reset(ctx, runtime.Request{Limit: l, Key: key, Cost: 99}))
				ds, err = lim.Decide(ctx, full)
				require.NoError(t, err)
				require.True(t, ds.Allowed, "the reset key admits its capacity at once")
				require.Zero(t, ds.Each[0].Remaining)
			}
			// A key never held stays so.
			n := lim.Len()
			require.NoError(t, lim.Reset(ctx, runtime.Request{Limit: l, Key: "none"}))
			require.Equal(t, n, lim.Len())
			require.Error(t, lim.Reset(ctx, runtime.Request{Limit: runtime.Limit{Name: "bad"}, Key: "k"}))
		})
	}
}

func TestHoldSettleAfterEviction(t *testing.T) {
	// A key forgotten meanwhile has nothing to give back, and is charged
	// afresh.
	for _, algo := range runtime.Algorithms() {
		clock := newFakeClock()
		lim := New(WithClock(clock.Now))
		l := holdLimit(algo)
		down := mustHold(t, lim, runtime.Request{Limit: l, Key: "a", Cost: 2})
		up := mustHold(t, lim, runtime.Request{Limit: l, Key: "b", Cost: 1})
		clock.Advance(time.Hour)
		require.Equal(t, 0, lim.sweep(), algo)
		require.NoError(t, down.Settle(ctx, 0))
		require.Equal(t, 0, lim.Len(), "%s: a give-back added a key", algo)
		require.NoError(t, up.Settle(ctx, 4))
		require.Equal(t, 1, lim.Len(), algo)
		ds := mustPeek(t, lim, runtime.Request{Limit: l, Key: "b"})
		require.Equal(t, l.Capacity()-3, ds.Each[0].Remaining, "%s: charged 3 more on a fresh key", algo)
	}
}

func TestHoldConcurrent(t *testing.T) {
	// Holds, settlements, decisions, peeks and resets on the same keys at
	// once: the race detector watches, and every call must get an answer.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				algo := runtime.Algorithms()[(g+i)%5]
				l := holdLimit(algo)
				reqs := []runtime.Request{{Limit: l, Key: "k", Cost: 2}}
				if i%3 == 0 {
					other := holdLimit(runtime.GCRA)
					other.Name = "other"
					reqs = append(reqs, runtime.Request{Limit: other, Key: "k"})
				}
				switch i % 7 {
				case 5:
					_, err := lim.Peek(ctx, reqs...)
					assert.NoError(t, err)
				case 6:
					assert.NoError(t, lim.Reset(ctx, reqs...))
					clock.Advance(time.Millisecond)
				default:
					_, h, err := lim.Hold(ctx, reqs...)
					assert.NoError(t, err)
					if h != nil {
						used := make([]int64, len(reqs))
						for j := range used {
							used[j] = int64(i % 5)
						}
						assert.NoError(t, h.Settle(ctx, used...))
					}
					_, err = lim.Allow(ctx, l, "k")
					assert.NoError(t, err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestHoldAllocations(t *testing.T) {
	// A Hold of one limit costs one allocation beyond Decide's Decisions.
	if testing.Short() {
		t.Skip("counts allocations")
	}
	lim := New(WithClock(newFakeClock().Now))
	for _, algo := range runtime.Algorithms() {
		l := runtime.Limit{Name: "alloc", Window: time.Minute, Max: 1000, Algorithm: algo}
		r := runtime.Request{Limit: l, Key: "user@example.com"}
		mustHold(t, lim, r) // creates the key
		used := []int64{0}
		n := testing.AllocsPerRun(100, func() {
			_, h, err := lim.Hold(ctx, r)
			if err != nil || h == nil {
				t.Fatal(err)
			}
			if err := h.Settle(ctx, used...); err != nil {
				t.Fatal(err)
			}
		})
		require.LessOrEqual(t, n, 2.0, algo)
	}
}
