package redislimit

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// An admitted is when a unit was admitted, in µs on Redis's clock: at
// some instant in [lo, hi], the times read just before its call and just
// after it. A test's processes and Redis run on one host, whose wall clock
// Redis's TIME reads.
type admitted struct{ lo, hi int64 }

// at is a unit admitted at t exactly.
func at(t int64) admitted { return admitted{t, t} }

// auditAdmissions checks admissions against what l's algorithm states
// (runtime.Algorithm): a fixed window holds at most Max in each window, a
// sliding window at most Max in any span of length Window, and a token
// bucket or GCRA at most Burst + Max*t/Window (GCRA: Burst + t/interval)
// in any span of length t. It counts in a span only the units surely
// admitted within it (both lo and hi inside), so that the time a call
// takes can hide a breach but never make one up. It returns the first
// breach, or "".
func auditAdmissions(l runtime.Limit, admissions []admitted) string {
	byLo := slices.Clone(admissions)
	slices.SortFunc(byLo, func(a, b admitted) int { return cmp.Compare(a.lo, b.lo) })
	byHi := slices.Clone(admissions)
	slices.SortFunc(byHi, func(a, b admitted) int { return cmp.Compare(a.hi, b.hi) })
	window := l.Window.Microseconds()
	max, burst := int64(l.Max), burstOf(l)
	interval := (window + max - 1) / max
	switch l.Algorithm {
	case runtime.FixedWindow:
		n := map[int64]int64{}
		for _, a := range admissions {
			if w := a.lo / window; a.hi/window == w {
				n[w]++
				if n[w] > max {
					return fmt.Sprintf("window %d holds %d units, above Max %d", w, n[w], max)
				}
			}
		}
	case runtime.SlidingWindow, runtime.TokenBucket, runtime.GCRA:
		// For each span's start (a unit's lo), the units that began there
		// or later, by their hi: each hi ends a span.
		for _, first := range byLo {
			n := int64(0)
			for _, a := range byHi {
				if a.lo < first.lo || a.hi < first.lo {
					continue
				}
				n++
				d := a.hi - first.lo
				allowed := max
				switch l.Algorithm {
				case runtime.SlidingWindow:
					if d >= window {
						allowed = math.MaxInt64
					}
				case runtime.TokenBucket:
					allowed = burst + d*max/window
				case runtime.GCRA:
					allowed = burst + d/interval
				}
				if n > allowed {
					return fmt.Sprintf("the span [%d, %d] µs holds %d units, above %d", first.lo, a.hi, n, allowed)
				}
				if l.Algorithm == runtime.SlidingWindow && d >= window {
					break
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
		var ok []admitted
		room := burstOf(l)
		if algo == runtime.FixedWindow || algo == runtime.SlidingWindow {
			room = int64(l.Max)
		}
		for range room {
			ok = append(ok, at(1_000_000))
		}
		if algo == runtime.TokenBucket || algo == runtime.GCRA {
			for i := range int64(5) {
				ok = append(ok, at(1_100_000+i*100_000))
			}
		}
		require.Empty(t, auditAdmissions(l, ok), "%s: a history within the bound", algo)
		require.NotEmpty(t, auditAdmissions(l, append(slices.Clone(ok), at(1_500_000))), "%s: one unit more", algo)
		// A unit whose call spans the boundary of the span it breaks
		// proves nothing.
		require.Empty(t, auditAdmissions(l, append(slices.Clone(ok), admitted{1_500_000, 3_000_000})), "%s: a slow call", algo)
	}
}

// leasingAlgorithms are the algorithms that lease.
var leasingAlgorithms = []runtime.Algorithm{runtime.GCRA, runtime.TokenBucket, runtime.FixedWindow, runtime.SlidingWindow}
