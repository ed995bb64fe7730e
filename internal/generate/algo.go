package generate

import (
	"fmt"
	"math"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The runtime defines the algorithms, their capacities and which limits it
// accepts (runtime.Algorithms, Limit.Capacity, Limit.Validate); the
// generator asks it rather than restating them. What follows is only what
// the generator adds: how to spell an algorithm in generated code, and
// advice about Redis memory.

// runtimeLimit is l as the runtime sees it.
func (l *limit) runtimeLimit() runtime.Limit {
	return runtime.Limit{Name: l.name, Window: l.window, Calendar: l.calendar, Max: l.max, Algorithm: l.algo, Burst: l.burst, Mode: l.mode}
}

// algorithm returns l's algorithm, resolving the default.
func (l *limit) algorithm() runtime.Algorithm {
	if l.algo == "" {
		return defaultAlgorithm()
	}
	return l.algo
}

// defaultAlgorithm is the algorithm of a limit without algo=, the first
// of the runtime's.
func defaultAlgorithm() runtime.Algorithm { return runtime.Algorithms()[0] }

// capacity is the largest cost one call of l can be admitted with.
func (l *limit) capacity() int { return l.runtimeLimit().Capacity() }

// runtimeConst returns the name of the runtime's constant for v, an
// Algorithm or a Mode, without its package: "GCRA", "ModeShadow".
func runtimeConst(v fmt.GoStringer) string {
	s := v.GoString()
	return s[strings.LastIndexByte(s, '.')+1:]
}

// burstApplies reports whether l's algorithm has a bucket that burst= sizes.
func (l *limit) burstApplies() bool { return parse.BurstApplies(l.algorithm()) }

// slidingLogWarnAbove is the largest max of a sliding log the generator
// accepts without a warning: a full key of it takes under 700 KB of Redis.
const slidingLogWarnAbove = 100_000

// slidingLogBytesPerEntry is what one admission costs a sliding log in
// Redis: 7 bytes, in one string per key (the in-memory limiter, 8).
const slidingLogBytesPerEntry = 7

// slidingLogMemory estimates, for messages, the Redis memory of one key of
// a full sliding log with the given max.
func slidingLogMemory(max int) string {
	b := float64(max) * slidingLogBytesPerEntry
	switch {
	case b < 1<<20:
		return fmt.Sprintf("%d KB", int(math.Round(b/(1<<10))))
	case b < 1<<30:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	}
	return fmt.Sprintf("%.1f GB", b/(1<<30))
}
