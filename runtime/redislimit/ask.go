package redislimit

import "github.com/ratelimitgen/ratelimitgen/runtime"

// An ask is one request as the scripts read it, resolved once when the
// call is decided: its storage key and its numbers in lua/main.lua's
// layout (see protocol.go). Script calls are built from asks; the deny
// cache, degrade and groups read the call's runtime.Requests.
type ask struct {
	key                            string
	code, window, max, burst, cost int64
}

// A decision is one call on its way to Redis: its requests resolved, and
// the verdicts and receipts that the replies fill, all indexed as the
// call's requests.
type decision struct {
	// now is the call's time in µs on the limiter's clock, or -1 for the
	// server's.
	now  int64
	asks []ask
	vs   []verdict
	// receipts is nil unless the call spans cluster slots, which may
	// need refunds.
	receipts []int64
}

// resolve appends reqs to asks, resolved; a request in runtime.ModeOff,
// which is never sent, gets the zero ask.
func (r *Limiter) resolve(asks []ask, reqs []runtime.Request) []ask {
	for _, q := range reqs {
		if q.Limit.Mode == runtime.ModeOff {
			asks = append(asks, ask{})
			continue
		}
		l := q.Limit
		asks = append(asks, ask{
			key:    r.storageKey(l, q.Key),
			code:   codeOf(l),
			window: l.Window.Microseconds(),
			max:    int64(l.Max),
			burst:  burstOf(l),
			cost:   costOf(q),
		})
	}
	return asks
}

// ordinals are the indexes of a call's requests when the call is its own
// single group, as a batched call is.
var ordinals = func() (o [16]int) {
	for i := range o {
		o[i] = i
	}
	return o
}()

// firstN returns the indexes 0 to n-1.
func firstN(n int) []int {
	if n <= len(ordinals) {
		return ordinals[:n:n]
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
