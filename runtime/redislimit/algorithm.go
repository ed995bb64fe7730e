package redislimit

import (
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// algoSpec is what the Redis backend keeps per algorithm; the algorithms
// themselves, their limits and capacities are runtime's.
type algoSpec struct {
	// tag goes into storage keys so that algorithms never read each
	// other's data structures.
	tag string
	// code is the algorithm's number in the script's input: the key its
	// lua file registers under in algos and decide1s (lua/header.lua). A
	// shadow limit's is code+shadowFlag.
	code int64
	// file is the algorithm's script in lua/.
	file string
}

var algoSpecs = map[runtime.Algorithm]algoSpec{
	runtime.SlidingLog:    {tag: "sl", code: 1, file: "sliding_log.lua"},
	runtime.SlidingWindow: {tag: "sw", code: 2, file: "sliding_window.lua"},
	runtime.FixedWindow:   {tag: "fw", code: 3, file: "fixed_window.lua"},
	runtime.TokenBucket:   {tag: "tb", code: 4, file: "token_bucket.lua"},
	runtime.GCRA:          {tag: "gc", code: 5, file: "gcra.lua"},
}

// specsByCode holds algoSpecs by code (see algoCode), so that a decision
// finds its algorithm's spec without hashing the algorithm's name.
var specsByCode = func() (t [shadowFlag]algoSpec) {
	for a, spec := range algoSpecs {
		if int64(algoCode(a)) != spec.code {
			panic("ratelimit: algoCode and algoSpecs disagree on " + string(a)) // a build defect
		}
		t[spec.code] = spec
	}
	return t
}()

// specOf returns l's algorithm's spec.
func specOf(l runtime.Limit) *algoSpec { return &specsByCode[algoCode(l.Algorithm)] }

// shadowFlag is added to an algorithm's code for a limit in
// runtime.ModeShadow: lua/main.lua's shadow_flag.
const shadowFlag = 8

// codeOf returns l's code in the script's input.
func codeOf(l runtime.Limit) int64 {
	c := specOf(l).code
	if l.Mode == runtime.ModeShadow {
		c += shadowFlag
	}
	return c
}

// algoCode numbers the algorithms, resolving the zero value; 0 is unknown.
func algoCode(a runtime.Algorithm) uint8 {
	switch a {
	case runtime.SlidingLog, "":
		return 1
	case runtime.SlidingWindow:
		return 2
	case runtime.FixedWindow:
		return 3
	case runtime.TokenBucket:
		return 4
	case runtime.GCRA:
		return 5
	}
	return 0
}

// offVerdict is the verdict of a limit in runtime.ModeOff, which is never
// sent to Redis.
func offVerdict(l runtime.Limit) verdict {
	return verdict{ok: true, remaining: int64(l.Capacity())}
}

// algorithmOf returns l's algorithm, resolving the zero value.
func algorithmOf(l runtime.Limit) runtime.Algorithm {
	if l.Algorithm == "" {
		return runtime.SlidingLog
	}
	return l.Algorithm
}

// costOf returns q's cost, resolving the zero value.
func costOf(q runtime.Request) int64 {
	if q.Cost == 0 {
		return 1
	}
	return q.Cost
}

// burstOf returns l's burst, which the scripts receive for every
// algorithm; 0 means Max.
func burstOf(l runtime.Limit) int64 {
	if l.Burst <= 0 {
		return int64(l.Max)
	}
	return int64(l.Burst)
}

// verdict is one limit's answer from a script; times in µs.
type verdict struct {
	ok                      bool
	remaining, retry, reset int64
}

func (v verdict) decision() runtime.Decision {
	return runtime.Decision{Allowed: v.ok, Remaining: int(v.remaining), RetryAfter: micros(v.retry), ResetAfter: micros(v.reset)}
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
