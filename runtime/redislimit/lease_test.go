package redislimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestLeasesDecideHotKeyInProcess hammers one key of a limit that never
// binds from several goroutines, for each leasing algorithm: with leases,
// most calls are decided from leases, Redis runs far fewer scripts than
// there are calls, and every call is admitted.
func TestLeasesDecideHotKeyInProcess(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, algo := range leasingAlgorithms {
		t.Run(string(algo), func(t *testing.T) {
			lim, cnt := countedLimiter(t, srv, WithLeases(10*time.Millisecond))
			l := runtime.Limit{Name: "lease.hot." + string(algo), Window: time.Second, Max: 1 << 30, Algorithm: algo}
			const goroutines, calls = 8, 5000
			before := cnt.calls(t)
			var bySource [runtime.SourceLease + 1]atomic.Int64
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for range calls {
						ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "hot"})
						if err != nil || !ds.Allowed {
							t.Errorf("decision %+v, %v", ds, err)
							return
						}
						bySource[ds.Source].Add(1)
					}
				})
			}
			wg.Wait()
			scripts := cnt.calls(t) - before
			leased := bySource[runtime.SourceLease].Load()
			t.Logf("%s: %d of %d calls from leases, %d script calls", algo, leased, goroutines*calls, scripts)
			require.Equal(t, int64(goroutines*calls), leased+bySource[runtime.SourceStore].Load())
			require.Greater(t, leased, int64(goroutines*calls/2))
			require.Less(t, scripts, int64(goroutines*calls/10))
		})
	}
}

// TestLeasesModesOverridesAndDenials decides hot keys on the test's clock,
// with leases on: a shadow limit and an off one never lease and decide as
// without leases; a limit whose Max an override lowers mid-lease takes no
// unit of the old lease, and the new Max holds at once; and a binding
// fixed window admits exactly Max, from leases and per call, after which
// its denials come from the deny cache.
func TestLeasesModesOverridesAndDenials(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	clock := newFakeClock()
	lim := New(srv.Client(t), WithClock(clock.Now), WithLeases(10*time.Millisecond), WithInstances(1),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	// hammer decides l on key n times, 100µs apart, waiting for any grant
	// on its way after each call so that the sequence is the same on any
	// machine, and counts the decisions by source and the admissions.
	hammer := func(l runtime.Limit, key string, n int) (bySource map[runtime.Source]int, admitted int) {
		bySource = map[runtime.Source]int{}
		for range n {
			ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: key})
			require.NoError(t, err)
			bySource[ds.Source]++
			if ds.Allowed {
				admitted++
			}
			clock.Advance(100 * time.Microsecond)
			lim.leases.settle()
		}
		return bySource, admitted
	}

	// Check runs the lease script too.
	_, err := lim.Check(ctx)
	require.NoError(t, err)

	t.Run("shadow and off", func(t *testing.T) {
		for _, mode := range []runtime.Mode{runtime.ModeShadow, runtime.ModeOff} {
			l := runtime.Limit{Name: "lease.mode." + mode.String(), Window: time.Hour, Max: 100, Algorithm: runtime.FixedWindow, Mode: mode}
			bySource, admitted := hammer(l, "k", 300)
			require.Equal(t, 300, admitted, "%s admits everything", mode)
			require.Zero(t, bySource[runtime.SourceLease], "%s leases nothing", mode)
			n, err := admin.Exists(ctx, lim.storageKey(l, "k")+leaseRecordsSuffix).Result()
			require.NoError(t, err)
			require.Zero(t, n, "%s: lease records", mode)
		}
	})

	t.Run("override lowers Max mid-lease", func(t *testing.T) {
		l := runtime.Limit{Name: "lease.override", Window: time.Hour, Max: 1000, Algorithm: runtime.FixedWindow}
		bySource, admitted := hammer(l, "k", 200)
		require.Equal(t, 200, admitted)
		require.Positive(t, bySource[runtime.SourceLease])
		require.Positive(t, leftInHand(lim), "a lease in hand when Max changes")
		// The window already holds more than the new Max (the old leases'
		// units count, used or not): nothing more is admitted.
		lowered := l
		lowered.Max = 150
		bySource, admitted = hammer(lowered, "k", 200)
		require.Zero(t, admitted)
		require.Zero(t, bySource[runtime.SourceLease])
	})

	t.Run("binding window and the deny cache", func(t *testing.T) {
		l := runtime.Limit{Name: "lease.bind", Window: time.Hour, Max: 100, Algorithm: runtime.FixedWindow}
		bySource, admitted := hammer(l, "k", 400)
		require.Equal(t, 100, admitted, "Max in the window, from leases and per call")
		require.Positive(t, bySource[runtime.SourceLease])
		require.Positive(t, bySource[runtime.SourceDenyCache], "denials answered from the deny cache")
	})
}
