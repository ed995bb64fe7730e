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
