package runtime

import (
	"fmt"
	"strconv"
)

// Algorithm selects how a Limit counts. The zero value is SlidingLog.
//
// Every algorithm runs in memory (MemoryLimiter) and in Redis (package
// redislimit) with identical decisions; docs/runtime.md lists each one's
// memory per key and Redis commands.
type Algorithm string

const (
	// SlidingLog is exact: a call of cost n is admitted only if at most
	// Max-n units were admitted in (now-Window, now], so no span of length
	// Window ever holds more than Max. It stores every admitted unit, so
	// its memory grows with Max; above a Max of about 128, SlidingWindow
	// costs far less.
	SlidingLog Algorithm = "sliding-log"

	// SlidingWindow approximates SlidingLog in constant memory, erring
	// strict: no span of length Window ever holds more than Max units, but
	// admissions up to Window/10 older than the window may still count, so
	// a key can be denied up to Window/10 early.
	SlidingWindow Algorithm = "sliding-window"

	// FixedWindow admits up to Max units in each window [k*Window,
	// (k+1)*Window) aligned to the Unix epoch. A span of length Window that
	// straddles a boundary can hold up to 2*Max.
	FixedWindow Algorithm = "fixed-window"

	// TokenBucket is a rate with a burst: a bucket of Burst tokens
	// (default Max) refills at Max per Window, and a call of cost n is
	// admitted if n tokens are left. Any span of length t admits at most
	// Burst + Max*t/Window units.
	TokenBucket Algorithm = "token-bucket"

	// GCRA, the generic cell rate algorithm, is the leaky bucket as a
	// meter: units are spaced by an interval of Window/Max, rounded up to
	// the microsecond, with a tolerance of Burst (default Max) intervals.
	// It admits like TokenBucket, never more, and stores one time per key.
	GCRA Algorithm = "gcra"
)

// Algorithms returns every Algorithm, in documentation order; the first is
// the default.
func Algorithms() []Algorithm {
	return []Algorithm{SlidingLog, SlidingWindow, FixedWindow, TokenBucket, GCRA}
}

// GoString returns a in Go syntax, such as runtime.GCRA, so that %#v prints
// a Limit as code and the generator can name the constant.
func (a Algorithm) GoString() string {
	switch a {
	case SlidingLog:
		return "runtime.SlidingLog"
	case SlidingWindow:
		return "runtime.SlidingWindow"
	case FixedWindow:
		return "runtime.FixedWindow"
	case TokenBucket:
		return "runtime.TokenBucket"
	case GCRA:
		return "runtime.GCRA"
	}
	return "runtime.Algorithm(" + strconv.Quote(string(a)) + ")"
}

// algorithm returns l's algorithm, resolving the zero value.
func (l Limit) algorithm() Algorithm {
	if l.Algorithm == "" {
		return SlidingLog
	}
	return l.Algorithm
}

// burst returns l's burst, defaulting to Max.
func (l Limit) burst() int {
	if l.Burst <= 0 {
		return l.Max
	}
	return l.Burst
}

// Capacity returns the largest cost one call can ever be admitted with: the
// bucket's size, Burst (or Max when Burst is 0), for TokenBucket and GCRA,
// and Max for the other algorithms.
func (l Limit) Capacity() int {
	switch l.algorithm() {
	case TokenBucket, GCRA:
		return l.burst()
	}
	return l.Max
}

// maxExact bounds the numbers the algorithms compute with, so that Lua's
// doubles hold them exactly and both backends decide alike.
const maxExact = 1 << 52

func validateAlgorithm(l Limit) error {
	if _, ok := memAlgoOf(l.Algorithm); !ok {
		return fmt.Errorf("ratelimit: limit %q has unknown Algorithm %q", l.Name, l.Algorithm)
	}
	if l.Burst < 0 {
		return fmt.Errorf("ratelimit: limit %q has Burst %d; it must be 0 (meaning Max) or positive", l.Name, l.Burst)
	}
	if l.algorithm() == TokenBucket && l.Window.Microseconds() > maxExact/int64(l.burst()) {
		return fmt.Errorf("ratelimit: token-bucket limit %q: Window %v times Burst %d is too large to count exactly; use a shorter window or a smaller burst", l.Name, l.Window, l.burst())
	}
	if wait := longestWait(l); wait > maxExact {
		return fmt.Errorf("ratelimit: limit %q: a wait of up to %d µs (about %d years) is too long to count exactly; use a shorter Window", l.Name, wait, wait/(365*24*3600*1_000_000))
	}
	return nil
}

// longestWait is the longest RetryAfter or ResetAfter l can produce, in µs,
// saturating instead of overflowing.
func longestWait(l Limit) int64 {
	w := l.Window.Microseconds()
	switch l.algorithm() {
	case SlidingWindow:
		b := ceilDiv(w, swBuckets)
		return (swBuckets + 1) * b
	case GCRA:
		interval := ceilDiv(w, int64(l.Max))
		if interval > maxExact/int64(l.burst()) {
			return maxExact + 1
		}
		return int64(l.burst()) * interval
	case TokenBucket:
		return ceilDiv(w*int64(l.burst()), int64(l.Max))
	}
	return w
}

// params is one limit of one call in the units both backends compute in:
// µs and admission units.
type params struct {
	window int64
	max    int64
	burst  int64
	cost   int64
}

func paramsOf(l Limit, cost int64) params {
	return params{window: l.Window.Microseconds(), max: int64(l.Max), burst: int64(l.burst()), cost: cost}
}

// verdict is one algorithm's answer for one limit, before the
// all-or-nothing commit; times in µs.
type verdict struct {
	ok        bool
	remaining int64
	retry     int64
	reset     int64
	// scratch and count carry what check learnt to commit, per algorithm.
	scratch, count int64
}

// floorDiv and ceilDiv divide rounding towards -inf and +inf, as Lua's
// math.floor(a / b) does for the whole numbers below 2^53 used here.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return floorDiv(a+b-1, b) }

func (v verdict) decision() Decision {
	return Decision{Allowed: v.ok, Remaining: int(v.remaining), RetryAfter: micros(v.retry), ResetAfter: micros(v.reset)}
}
