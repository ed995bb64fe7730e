package generate

import (
	"fmt"
	"math"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// algoConsts maps each algo= value to the runtime's constant for it. The
// generator does not import the runtime (which would link the Redis client
// into it); a test checks that the two agree.
var algoConsts = map[string]string{
	"sliding-log":    "SlidingLog",
	"sliding-window": "SlidingWindow",
	"fixed-window":   "FixedWindow",
	"token-bucket":   "TokenBucket",
	"gcra":           "GCRA",
}

// maxExactUnits mirrors the runtime's bound on the numbers its algorithms
// compute with (2^52, exact in Lua's doubles). The token bucket counts in
// units of 1/Window µs, so Window in µs times Burst must stay below it.
const maxExactUnits = 1 << 52

// algorithm returns l's algorithm, resolving the default.
func (l *limit) algorithm() string {
	if l.algo == "" {
		return parse.DefaultAlgorithm
	}
	return l.algo
}

// capacity is the largest cost one call of l can be admitted with, as the
// runtime computes it: the bucket's size for the algorithms with a burst,
// max otherwise.
func (l *limit) capacity() int {
	if parse.HasBurst(l.algorithm()) && l.burst > 0 {
		return l.burst
	}
	return l.max
}

// tokenBucketTooLarge reports, as the runtime's Limit.Validate would
// refuse it, a token bucket whose window and burst are too large to count
// exactly.
func tokenBucketTooLarge(algo string, window time.Duration, capacity int) bool {
	return algo == "token-bucket" && window.Microseconds() > maxExactUnits/int64(capacity)
}

// slidingWindowBuckets mirrors the runtime's count of sub-windows.
const slidingWindowBuckets = 10

// longestWait mirrors the runtime's bound on the longest RetryAfter or
// ResetAfter a limit can produce, in µs, which must not exceed 2^52 for
// the runtime to accept the limit. capacity is the burst, or max; the
// token bucket's own bound (tokenBucketTooLarge) is checked first.
func longestWait(algo string, window time.Duration, max, capacity int) int64 {
	w := window.Microseconds()
	switch algo {
	case "sliding-window":
		return (slidingWindowBuckets + 1) * ceilDiv(w, slidingWindowBuckets)
	case "gcra":
		interval := ceilDiv(w, int64(max))
		if interval > maxExactUnits/int64(capacity) {
			return maxExactUnits + 1
		}
		return int64(capacity) * interval
	case "token-bucket":
		return ceilDiv(w*int64(capacity), int64(max))
	}
	return w
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// slidingLogWarnAbove is the largest max at which a sliding log stays in
// Redis's compact sorted-set encoding (zset-max-listpack-entries).
const slidingLogWarnAbove = 128

// slidingLogBytesPerEntry is what one admission costs a sliding log in
// Redis 7 past the compact encoding: MEMORY USAGE measured 118 to 129 bytes
// per entry from max=200 to max=5000.
const slidingLogBytesPerEntry = 120

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
