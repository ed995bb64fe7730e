package redislimit

import (
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// largeLimits returns limits of algo around the size where
// lua/sliding_log.lua changes how it reads and writes a log: Max 128 and
// below whole (GET, SET), above in place (GETRANGE, SETRANGE), on a ring
// that grows by doubling and wraps around. Max 1 takes the paths of a log
// holding one entry. The other algorithms run them too.
func largeLimits(algo runtime.Algorithm) []runtime.Limit {
	tag := string(algo)
	return []runtime.Limit{
		{Name: tag + "-1", Window: time.Hour, Max: 1, Algorithm: algo},
		{Name: tag + "-128", Window: time.Hour + 3*time.Microsecond, Max: 128, Burst: 40, Algorithm: algo},
		{Name: tag + "-129", Window: 2 * time.Hour, Max: 129, Algorithm: algo},
		{Name: tag + "-300", Window: time.Hour + 11*time.Microsecond, Max: 300, Burst: 7, Algorithm: algo},
	}
}

// TestDifferentialLargeLimits compares the backends, as TestDifferential
// does, on limits large enough for the sliding log's in-place path.
func TestDifferentialLargeLimits(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	keys := []string{"a", "b"}
	for i, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			ls := largeLimits(algo)
			diffScenario{seed: uint64(100 + i), steps: 3000, single: ls, multi: ls,
				keys: keys, pAll: 0.15, backwards: true}.run(newDiffHarness(t, client))
		})
	}
	t.Run("modes", func(t *testing.T) {
		var ls []runtime.Limit
		for _, algo := range runtime.Algorithms() {
			ls = append(ls, largeLimits(algo)[1:3]...)
		}
		diffScenario{seed: 140, steps: 3000, single: ls, multi: ls,
			keys: keys, pAll: 0.5, backwards: true, modes: true}.run(newDiffHarness(t, client))
	})
}
