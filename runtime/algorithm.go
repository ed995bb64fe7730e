package runtime

import "fmt"

// Algorithm selects how a Limit counts. The zero value is SlidingLog.
type Algorithm string

const (
	// SlidingLog is exact: a call is admitted only if fewer than Max
	// admissions lie in the last Window. It stores one entry per admission,
	// so its memory grows with Max; prefer SlidingWindow above a few hundred.
	SlidingLog Algorithm = "sliding-log"
)

// algoSpec is what the backends need to know about an algorithm.
type algoSpec struct {
	// tag goes into storage keys so that algorithms never read each
	// other's data structures.
	tag string
	// newState makes the in-memory twin's per-key state.
	newState func() memState
}

var algoSpecs = map[Algorithm]algoSpec{
	SlidingLog: {tag: "sl", newState: func() memState { return &slidingLog{} }},
}

// storageAlgo is the sliding log's key tag, kept for tests that look at
// what Redis holds.
const storageAlgo = "sl"

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

// capacity is the largest cost a single call can ever be admitted with.
func (l Limit) capacity() int {
	switch l.algorithm() {
	case SlidingLog:
		return l.Max
	}
	return l.burst()
}

func validateAlgorithm(l Limit) error {
	if _, ok := algoSpecs[l.algorithm()]; !ok {
		return fmt.Errorf("ratelimit: limit %q has unknown Algorithm %q", l.Name, l.Algorithm)
	}
	if l.Burst < 0 {
		return fmt.Errorf("ratelimit: limit %q has Burst %d; it must be 0 (meaning Max) or positive", l.Name, l.Burst)
	}
	return nil
}

// params is one limit of one call in the units both backends compute in:
// µs and admission units.
type params struct {
	window int64
	max    int64
	burst  int64
	cost   int64
}

func paramsOf(l Limit, cost int) params {
	return params{window: l.Window.Microseconds(), max: int64(l.Max), burst: int64(l.burst()), cost: int64(cost)}
}

// verdict is one algorithm's answer for one limit, before the
// all-or-nothing commit; times in µs.
type verdict struct {
	ok        bool
	remaining int64
	retry     int64
	reset     int64
}

func (v verdict) decision(allowed bool) Decision {
	return Decision{Allowed: allowed, Remaining: int(v.remaining), RetryAfter: micros(v.retry), ResetAfter: micros(v.reset)}
}

// memState is the in-memory twin of one algorithm's per-key Redis state.
// check must not change what counts; commit records the call that check
// allowed. Both run under the key's shard lock.
type memState interface {
	check(now int64, p params) verdict
	// commit also sets v.reset, after which the state holds nothing that
	// counts and may be evicted.
	commit(now int64, p params, v *verdict)
}
