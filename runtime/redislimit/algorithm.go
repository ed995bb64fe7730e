package redislimit

import "github.com/ratelimitgen/ratelimitgen/runtime"

// The algorithms' codes: each algorithm's number in the scripts' input
// and its key in lua/header.lua's registry (algos and decide1s). The
// scripts read them as the Lua constants named in algoSpecs (see
// luaConstants); 0 is no algorithm.
const (
	codeSlidingLog = 1 + iota
	codeSlidingWindow
	codeFixedWindow
	codeTokenBucket
	codeGCRA
	// codeConcurrency is runtime.Concurrency's, which limits calls in
	// flight: it is in no list of runtime.Algorithms, and never leases.
	codeConcurrency
	// codeCalendar is a runtime.FixedWindow limit with a runtime.Calendar
	// (lua/calendar_window.lua): its windows are the calendar's, whose
	// boundaries the client computes in the zone and sends (see
	// Limiter.resolveCalendars), and its state is kept apart from a plain
	// fixed window's. It never leases (see leases).
	codeCalendar
)

// algoSpec is what the Redis backend keeps per algorithm; the algorithms
// themselves, their limits and capacities are runtime's.
type algoSpec struct {
	// tag goes into storage keys so that algorithms never read each
	// other's data structures.
	tag string
	// code is the algorithm's code. A shadow limit's is code+shadowFlag.
	code int64
	// file is the algorithm's script in lua/, and lua the name of its code
	// there.
	file, lua string
}

// specsByCode is the registry: every algorithm's spec, by code (see
// algoCode), so that a decision finds its algorithm's spec without hashing
// the algorithm's name. Everything else the backend and its scripts know
// of the algorithms is derived from it and algoCode.
var specsByCode = [shadowFlag]algoSpec{
	codeSlidingLog:    {tag: "sl", code: codeSlidingLog, file: "sliding_log.lua", lua: "SLIDING_LOG"},
	codeSlidingWindow: {tag: "sw", code: codeSlidingWindow, file: "sliding_window.lua", lua: "SLIDING_WINDOW"},
	codeFixedWindow:   {tag: "fw", code: codeFixedWindow, file: "fixed_window.lua", lua: "FIXED_WINDOW"},
	codeTokenBucket:   {tag: "tb", code: codeTokenBucket, file: "token_bucket.lua", lua: "TOKEN_BUCKET"},
	codeGCRA:          {tag: "gc", code: codeGCRA, file: "gcra.lua", lua: "GCRA"},
	codeConcurrency:   {tag: "cc", code: codeConcurrency, file: "concurrency.lua", lua: "CONCURRENCY"},
	codeCalendar:      {tag: "cw", code: codeCalendar, file: "calendar_window.lua", lua: "CALENDAR_WINDOW"},
}

// algoSpecs holds specsByCode by algorithm, for the rate algorithms
// (runtime.Algorithms): those that every per-algorithm check runs.
var algoSpecs = func() map[runtime.Algorithm]algoSpec {
	m := make(map[runtime.Algorithm]algoSpec)
	for _, a := range runtime.Algorithms() {
		spec := specsByCode[algoCode(a)]
		if spec.file == "" {
			panic("ratelimit: no Redis script for the algorithm " + string(a)) // a build defect
		}
		m[a] = spec
	}
	return m
}()

// specOf returns l's algorithm's spec: a calendar limit's is
// codeCalendar's.
func specOf(l runtime.Limit) *algoSpec {
	if !l.Calendar.IsZero() {
		return &specsByCode[codeCalendar]
	}
	return &specsByCode[algoCode(l.Algorithm)]
}

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
		return codeSlidingLog
	case runtime.SlidingWindow:
		return codeSlidingWindow
	case runtime.FixedWindow:
		return codeFixedWindow
	case runtime.TokenBucket:
		return codeTokenBucket
	case runtime.GCRA:
		return codeGCRA
	case runtime.Concurrency:
		return codeConcurrency
	}
	return 0
}

// offVerdict is the verdict of a limit in runtime.ModeOff, which is never
// sent to Redis.
func offVerdict(l runtime.Limit) verdict {
	return verdict{ok: true, remaining: int64(l.Capacity())}
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

// resolveLimit sets a, but for its storage key, to q's numbers. Both are
// passed by pointer: a decision resolves before the deny cache answers, so
// this is on the path of every cached denial. A calendar limit's
// boundaries are left to Limiter.resolveCalendars, which loads its zone.
func resolveLimit(a *ask, q *runtime.Request) {
	a.code, a.window, a.max = codeOf(q.Limit), q.Limit.Window.Microseconds(), int64(q.Limit.Max)
	a.burst, a.cost = burstOf(q.Limit), costOf(*q)
}
