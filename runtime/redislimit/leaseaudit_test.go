package redislimit

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// auditAdmissions checks admissions, the µs (on Redis's clock) at which
// each unit was admitted, against what l's algorithm states
// (runtime.Algorithm): a fixed window holds at most Max in each window, a
// sliding window at most Max in any span of length Window, and a token
// bucket or GCRA at most Burst + Max*t/Window (GCRA: Burst + t/interval)
// in any span of length t. It returns the first breach, or "".
func auditAdmissions(l runtime.Limit, admissions []int64) string {
	ts := slices.Clone(admissions)
	slices.Sort(ts)
	window := l.Window.Microseconds()
	max, burst := int64(l.Max), burstOf(l)
	switch l.Algorithm {
	case runtime.FixedWindow:
		for i, j := 0, 0; i < len(ts); i = j {
			for j = i; j < len(ts) && ts[j]/window == ts[i]/window; j++ {
			}
			if int64(j-i) > max {
				return fmt.Sprintf("window %d holds %d units, above Max %d", ts[i]/window, j-i, max)
			}
		}
	case runtime.SlidingWindow:
		for i, j := 0, 0; i < len(ts); i++ {
			for j < len(ts) && ts[j] < ts[i]+window {
				j++
			}
			if int64(j-i) > max {
				return fmt.Sprintf("the span [%d, %d) µs holds %d units, above Max %d", ts[i], ts[i]+window, j-i, max)
			}
		}
	case runtime.TokenBucket, runtime.GCRA:
		interval := (window + max - 1) / max
		for i := range ts {
			for j := i; j < len(ts); j++ {
				d := ts[j] - ts[i]
				allowed := burst + d*max/window
				if l.Algorithm == runtime.GCRA {
					allowed = burst + d/interval
				}
				if int64(j-i+1) > allowed {
					return fmt.Sprintf("the span [%d, %d] µs holds %d units, above %d", ts[i], ts[j], j-i+1, allowed)
				}
			}
		}
	default:
		return "no audit for " + string(l.Algorithm)
	}
	return ""
}

// TestAuditAdmissionsCanFail feeds the audit histories that each break
// their algorithm's bound by one unit, and the same histories less that
// unit, so that the audits of the lease tests are known to catch a breach.
func TestAuditAdmissionsCanFail(t *testing.T) {
	const window = time.Second
	for _, algo := range leasingAlgorithms {
		l := runtime.Limit{Name: "audit", Window: window, Max: 10, Burst: 4, Algorithm: algo}
		// Capacity at one instant, then for a bucket one unit each time
		// one refills (every 100ms at Max 10 per second), for half a window.
		var ok []int64
		room := burstOf(l)
		if algo == runtime.FixedWindow || algo == runtime.SlidingWindow {
			room = int64(l.Max)
		}
		for range room {
			ok = append(ok, 1_000_000)
		}
		if algo == runtime.TokenBucket || algo == runtime.GCRA {
			for i := range int64(5) {
				ok = append(ok, 1_100_000+i*100_000)
			}
		}
		require.Empty(t, auditAdmissions(l, ok), "%s: a history within the bound", algo)
		require.NotEmpty(t, auditAdmissions(l, append(slices.Clone(ok), 1_500_000)), "%s: one unit more", algo)
	}
}

// leasingAlgorithms are the algorithms that lease.
var leasingAlgorithms = []runtime.Algorithm{runtime.GCRA, runtime.TokenBucket, runtime.FixedWindow, runtime.SlidingWindow}
