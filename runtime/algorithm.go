package runtime

import (
	"fmt"
	"math"
	"strconv"
)

// Algorithm selects how a Limit counts. The zero value is SlidingLog.
//
// Every algorithm runs in memory (package memlimit) and in Redis (package
// redislimit) with identical decisions; docs/runtime.md lists each one's
// memory per key and Redis commands.
//
// With leases (redislimit.WithLeases), an instance hot on a key admits
// from units it leased: each is recorded in Redis as an admission when
// granted, before it is used, so every bound below still holds across the
// fleet. What a lease changes is stated per algorithm: units held by one
// instance cannot serve another, so a key may be denied while units are
// out, at most the units outstanding in leases, each at most a lease's
// life old.
//
// A call admitted through a Holder is settled at what it used (see Hold):
// each limit that recorded it keeps a receipt of where its units went, and
// a settlement at the limit's clock now gives back d = reserved - used
// units, or charges e = min(used, Capacity) - reserved more, as stated per
// algorithm. A charge is recorded even past Max, so that later calls wait
// for it. A key forgotten meanwhile (evicted, expired, reset) has nothing to
// give back, and is charged afresh.
type Algorithm string

const (
	// SlidingLog is exact: a call of cost n is admitted only if at most
	// Max-n units were admitted in (now-Window, now], so no span of length
	// Window ever holds more than Max. It stores every unit admitted in the
	// last Window, 7 bytes each in Redis and 8 in memory, so Max is at most
	// MaxSlidingLog; a decision's Redis time does not grow with Max, and a
	// call's grows only with the 7 bytes per unit it records. An
	// admission within a quarter window of the newest may keep up to three
	// units that stopped counting, while another still counts and in the
	// room that Max leaves and that 128 units leave, until a later call
	// drops them; if the clock steps back meanwhile they count again,
	// which errs toward denial. It never leases: its decisions stay per call, exact.
	//
	// Settling: the receipt is the time the call's units were recorded
	// at. A give-back removes up to d of the entries of that time while
	// they still count (lie in the window); expired ones are not given
	// back. A charge records e more entries at now, as a call of cost e
	// would, room or not.
	SlidingLog Algorithm = "sliding-log"

	// SlidingWindow approximates SlidingLog in constant memory, erring
	// strict: no span of length Window ever holds more than Max units, but
	// admissions up to Window/10 older than the window may still count, so
	// a key can be denied up to Window/10 early. A lease is charged to the
	// bucket (a tenth of the window) current at its grant and ends with it;
	// its unused units are taken back from that bucket.
	//
	// Settling: the receipt is the bucket the call counted in. A give-back
	// subtracts d from that bucket, never below 0, while it still counts; a
	// charge adds e to the current bucket.
	SlidingWindow Algorithm = "sliding-window"

	// FixedWindow admits up to Max units in each window [k*Window,
	// (k+1)*Window) aligned to the Unix epoch. A span of length Window that
	// straddles a boundary can hold up to 2*Max. A lease is charged to the
	// window current at its grant and ends with it; its unused units are
	// taken back from that window.
	//
	// Settling: the receipt is the window the call counted in. A give-back
	// subtracts d from the key's count, never below 0, while that window is
	// the current one, and does nothing once it has ended. A
	// charge adds e to the current window's count (floor(now/Window), or the
	// key's window if later; a count of an earlier window starts again from
	// 0).
	//
	// With a Calendar, the windows are the calendar's periods in its zone
	// instead (see Calendar), and the receipt is the window's start; a
	// calendar limit never leases, as its windows have no fixed length.
	FixedWindow Algorithm = "fixed-window"

	// TokenBucket is a rate with a burst: a bucket of Burst tokens
	// (default Max) refills at Max per Window, and a call of cost n is
	// admitted if n tokens are left. Any span of length t admits at most
	// Burst + Max*t/Window units. Units out in leases are kept out of the
	// bucket, which refills only up to Burst less them; a lease gives back
	// its unused units when released, and none when it ends unreleased.
	//
	// Settling needs no receipt. A give-back adds d tokens to the level as
	// last recorded, up to Burst (a key never recorded is full). A charge
	// takes e tokens from the level refilled to now, which may leave it below
	// zero: calls then wait until it refills to their cost.
	TokenBucket Algorithm = "token-bucket"

	// GCRA, the generic cell rate algorithm, is the leaky bucket as a
	// meter: units are spaced by an interval of Window/Max, rounded up to
	// the microsecond, with a tolerance of Burst (default Max) intervals.
	// It admits like TokenBucket, never more, and stores one time per key;
	// leases change it as they change TokenBucket.
	//
	// Settling needs no receipt. A give-back moves the theoretical arrival
	// time (TAT) d intervals earlier, but not before now; a charge sets it
	// to max(TAT, now) + e intervals.
	GCRA Algorithm = "gcra"

	// Concurrency limits calls in flight rather than a rate: at most Max
	// calls of a key hold a permit at once, each one permit, so a call's
	// cost must be 1. A permit is taken when the call is admitted and
	// released when its Hold is settled (see Admit, Keep and PermitHold).
	// Window is a permit's lease: a permit not renewed within Window of its
	// acquisition or last renewal, on the store's clock, expires, and
	// counts no more, so that the permits of a process that died come back
	// within one lease. Its call's context is cancelled before then (see
	// Keep), so at most Max calls run at once, counting a call whose
	// context says ErrPermitLost as no longer running. A denial's
	// RetryAfter is 0: a permit comes back when a call ends, which nothing
	// predicts; ResetAfter is when the last permit's lease ends.
	//
	// A lower Max (an override) takes no permit away: calls are admitted
	// again once fewer than the new Max hold one.
	Concurrency Algorithm = "concurrency"
)

// Algorithms returns every Algorithm that limits a rate, in documentation
// order; the first is the default. Concurrency, which limits calls in
// flight, is apart.
func Algorithms() []Algorithm {
	return []Algorithm{SlidingLog, SlidingWindow, FixedWindow, TokenBucket, GCRA}
}

// known reports whether a is one of Algorithms, or the zero value.
func (a Algorithm) known() bool {
	switch a {
	case "", SlidingLog, SlidingWindow, FixedWindow, TokenBucket, GCRA, Concurrency:
		return true
	}
	return false
}

// slidingWindowBuckets is how many buckets SlidingWindow divides its
// window into: it counts the current bucket, ⌈Window/10⌉ µs long, and the
// 10 before it, so admissions up to one bucket older than the window
// still count. Both backends count so.
const slidingWindowBuckets = 10

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
	case Concurrency:
		return "runtime.Concurrency"
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
// 1 for Concurrency, and Max for the other algorithms.
func (l Limit) Capacity() int {
	switch l.algorithm() {
	case TokenBucket, GCRA:
		return l.burst()
	case Concurrency:
		return 1
	}
	return l.Max
}

// MaxUnits is the largest Max and Burst of any Limit, and so the largest
// cost: 2^52. Every count an algorithm forms stays at most 2^53, which a
// Redis script's Lua numbers (doubles) hold exactly, so both backends
// decide alike. For a limit that never denies, use ModeOff, not a huge Max.
const MaxUnits int64 = maxExact

// MaxSlidingLog is the largest Max of a SlidingLog limit, and so its
// largest cost. It bounds a key's memory: a full log of this Max takes
// 7 MB in Redis and 8 MB in memory (Max 1,000: about 7 KB). SlidingWindow
// has no such bound.
const MaxSlidingLog = 1_000_000

// maxExact bounds every number the algorithms compute with, counts and
// times (µs ahead of now) alike, so that Lua's doubles hold the sums they
// form exactly. Times are absolute in the scripts, so the bound holds
// while now is below 2^52 µs after the Unix epoch (the year 2112).
const maxExact = 1 << 52

func validateAlgorithm(l Limit) error {
	if !l.Algorithm.known() {
		return fmt.Errorf("ratelimit: limit %q has unknown Algorithm %q", l.Name, l.Algorithm)
	}
	switch {
	case l.Burst < 0:
		return fmt.Errorf("ratelimit: limit %q has Burst %d; it must be 0 (meaning Max) or positive", l.Name, l.Burst)
	case int64(l.Burst) > MaxUnits:
		return fmt.Errorf("ratelimit: limit %q has Burst %d; it can be at most 2^52 (%d), the largest count both backends keep exactly", l.Name, l.Burst, MaxUnits)
	case l.algorithm() == SlidingLog && l.Max > MaxSlidingLog:
		return fmt.Errorf("ratelimit: sliding-log limit %q has Max %d; a sliding log stores every unit of its window, so it can be at most %d, which bounds a key's memory; use SlidingWindow (algo=sliding-window: never over Max, constant memory) for larger limits", l.Name, l.Max, MaxSlidingLog)
	case l.algorithm() == TokenBucket && l.Window.Microseconds() > maxExact/int64(l.burst()):
		return fmt.Errorf("ratelimit: token-bucket limit %q: Window %v times Burst %d is too large to count exactly (at most 2^52 µs); use a shorter window or a smaller burst", l.Name, l.Window, l.burst())
	}
	if span := longestSpan(l); span > maxExact {
		return fmt.Errorf("ratelimit: limit %q: Window %v makes it count times up to %d µs (about %d years) ahead, beyond the 2^52 µs it counts exactly; use a shorter Window", l.Name, l.Window, span, span/(365*24*3600*1_000_000))
	}
	return nil
}

// longestSpan is the longest span ahead of now, in µs, that l's arithmetic
// forms, saturating instead of overflowing: the longest RetryAfter or
// ResetAfter, except for GCRA, which adds a call's cost to an arrival time
// up to its tolerance ahead before comparing, so twice its tolerance.
func longestSpan(l Limit) int64 {
	w := l.Window.Microseconds()
	switch l.algorithm() {
	case SlidingWindow:
		b := ceilDiv(w, slidingWindowBuckets)
		return (slidingWindowBuckets + 1) * b
	case GCRA:
		interval := ceilDiv(w, int64(l.Max))
		if interval > math.MaxInt64/2/int64(l.burst()) {
			return math.MaxInt64
		}
		return 2 * int64(l.burst()) * interval
	case TokenBucket:
		return ceilDiv(w*int64(l.burst()), int64(l.Max))
	}
	return w
}

// ceilDiv divides a by b > 0, rounding up, for a ≥ 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
