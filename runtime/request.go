package runtime

import (
	"fmt"
	"math/bits"
	"strconv"
)

// Request is one limit of a call: the limit, the key it counts under, and
// the call's cost in units.
type Request struct {
	Limit Limit
	Key   string
	// Cost is how many units of the limit the call uses; 0 means 1. It is
	// an int64 so that a cost computed in any integer type converts exactly
	// (a uint64 beyond the int64 range turns negative and is rejected).
	Cost int64
}

func (r Request) cost() int64 {
	if r.Cost == 0 {
		return 1
	}
	return r.Cost
}

// Validate reports whether reqs can be decided, as every Limiter of this
// module checks before deciding: there is at least one request, each Limit
// is valid (see Limit.Validate), each cost is between 1 and the limit's
// capacity (errors wrap ErrInvalidCost), and no limit appears twice for
// the same key, as the call would then be counted twice against it.
// Limiters written elsewhere may call it to behave alike.
func Validate(reqs ...Request) error {
	if len(reqs) == 0 {
		return fmt.Errorf("ratelimit: a call needs at least one Request")
	}
	for i := range reqs {
		r := &reqs[i]
		// Nearly every request is plain; checking it in place spares
		// copying its Limit.
		if !plainRequest(&r.Limit, r.cost()) {
			if err := checkRequest(r.Limit, r.cost()); err != nil {
				return err
			}
		}
		for _, o := range reqs[:i] {
			if o.Limit.Name == r.Limit.Name && o.Key == r.Key {
				return fmt.Errorf("ratelimit: limit %q appears twice for one key in one call; give each limit its own Name", r.Limit.Name)
			}
		}
	}
	return nil
}

// checkRequest validates one limit and cost.
func checkRequest(l Limit, n int64) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if n < 1 {
		return costError(l, n, "the cost must be at least 1")
	}
	if l.algorithm() == Concurrency && n != 1 {
		return costError(l, n, "a concurrency limit counts calls in flight, each holding one permit, so the cost must be 1")
	}
	if c := l.Capacity(); n > int64(c) {
		return costError(l, n, "it is larger than the limit's capacity ("+strconv.Itoa(c)+"), so it could never be admitted")
	}
	return nil
}

// plainRequest reports, in a few comparisons, that a call of cost n under
// l passes every check of checkRequest, as nearly every call does, so that
// the hot path skips Limit.Validate's work (dividing to bound the waits). It is
// conservative: false only means that checkRequest must look closer.
//
// The one check that needs arithmetic is that no number an algorithm
// computes exceeds maxExact. All of them are at most twice Window (µs)
// times max(Max, Burst), so a product of at most 51 bits passes: Window ×
// Burst for the token bucket's level, twice Burst intervals of at most
// Window each for GCRA, 11 buckets of Window/10 for the sliding window;
// and so do Max and Burst, each below MaxUnits.
func plainRequest(l *Limit, n int64) bool {
	w := l.Window.Microseconds()
	if l.Name == "" || w < 1 || l.Max < 1 || l.Burst < 0 || n < 1 || l.Mode > ModeOff {
		return false
	}
	burst := l.burst()
	capacity := l.Max
	switch l.Algorithm {
	case "", SlidingLog:
		if l.Max > MaxSlidingLog {
			return false
		}
	case SlidingWindow, FixedWindow:
	case TokenBucket, GCRA:
		capacity = burst
	case Concurrency:
		capacity = 1
	default:
		return false
	}
	return n <= int64(capacity) && bits.Len64(uint64(w))+bits.Len64(uint64(max(l.Max, burst))) <= 51
}
