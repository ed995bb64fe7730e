package memlimit

import (
	"fmt"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// algoIndex numbers the algorithms for the limiter's keys, so that an
// entry records its algorithm in one byte.
type algoIndex uint8

const (
	algoSlidingLog algoIndex = iota
	algoSlidingWindow
	algoFixedWindow
	algoTokenBucket
	algoGCRA
	algoConcurrency
	// algoCalendar is a FixedWindow limit with a runtime.Calendar: its
	// state, and so its entries, differ from a plain fixed window's.
	algoCalendar
	algoCount
)

// algoIndexOf returns a's number; the zero Algorithm is SlidingLog. ok is
// false for an unknown algorithm, which runtime.Validate rejects.
func algoIndexOf(a runtime.Algorithm) (_ algoIndex, ok bool) {
	switch a {
	case runtime.SlidingLog, "":
		return algoSlidingLog, true
	case runtime.SlidingWindow:
		return algoSlidingWindow, true
	case runtime.FixedWindow:
		return algoFixedWindow, true
	case runtime.TokenBucket:
		return algoTokenBucket, true
	case runtime.GCRA:
		return algoGCRA, true
	case runtime.Concurrency:
		return algoConcurrency, true
	}
	return 0, false
}

// algoOf returns l's number: a FixedWindow limit with a Calendar counts
// calendar windows (algoCalendar), apart from plain fixed windows.
func algoOf(l runtime.Limit) algoIndex {
	if !l.Calendar.IsZero() {
		return algoCalendar
	}
	a, _ := algoIndexOf(l.Algorithm)
	return a
}

// params is one limit of one call in the units the algorithms compute in,
// as the Redis scripts do: µs and admission units.
type params struct {
	window int64
	max    int64
	burst  int64
	cost   int64
	// cal is the calendar of a calendar limit (algoCalendar), nil for any
	// other.
	cal *runtime.CalendarWindows
}

// paramsOf returns the params of a call of cost n under l, which
// runtime.Validate accepted. Only a calendar limit whose zone cannot be
// loaded fails.
func (m *Limiter) paramsOf(l runtime.Limit, n int64) (params, error) {
	burst := l.Burst
	if burst <= 0 {
		burst = l.Max
	}
	p := params{window: l.Window.Microseconds(), max: int64(l.Max), burst: int64(burst), cost: n}
	if !l.Calendar.IsZero() {
		w, err := m.zones.Windows(l.Calendar)
		if err != nil {
			return p, fmt.Errorf("%w (limit %q)", err, l.Name)
		}
		p.cal = w
	}
	return p, nil
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
	// end is the end of a calendar window (µs) that check found.
	end int64
}

func (v verdict) decision() runtime.Decision {
	return runtime.Decision{Allowed: v.ok, Remaining: int(v.remaining), RetryAfter: micros(v.retry), ResetAfter: micros(v.reset)}
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

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
