package redislimit

import "github.com/ratelimitgen/ratelimitgen/runtime"

// An ask is one request as the scripts read it, resolved once when the
// call is decided: its numbers in lua/main.lua's layout (see protocol.go),
// which the deny cache matches denials by, and its storage key, set once
// the deny cache has not answered (see placeKeys). A request in
// runtime.ModeOff, which is never sent, has the zero ask.
type ask struct {
	key                            string
	code, window, max, burst, cost int64
}

// algo is a's algorithm code, without the shadow flag.
func (a *ask) algo() uint8 { return uint8(a.code &^ shadowFlag) }

// A resolvedCall is one call on its way to Redis: its requests resolved,
// and the verdicts and receipts that the replies fill, all indexed as the
// call's requests.
type resolvedCall struct {
	// now is the call's time in µs on the limiter's clock, or -1 for the
	// server's.
	now  int64
	asks []ask
	vs   []verdict
	// receipts is nil unless the call spans cluster slots, which may
	// need refunds.
	receipts []int64
}

// resolveLimits appends reqs' numbers to asks, and gives each request in
// runtime.ModeOff its verdict in vs. It reports whether any request is
// not off, that is, whether Redis has anything to decide.
func resolveLimits(asks []ask, reqs []runtime.Request, vs []verdict) ([]ask, bool) {
	on := false
	for i, q := range reqs {
		if q.Limit.Mode == runtime.ModeOff {
			vs[i] = offVerdict(q.Limit)
			asks = append(asks, ask{})
			continue
		}
		on = true
		asks = append(asks, resolveLimit(q))
	}
	return asks, on
}

// resolveLimit returns q's ask without its storage key.
func resolveLimit(q runtime.Request) ask {
	l := q.Limit
	return ask{
		code:   codeOf(l),
		window: l.Window.Microseconds(),
		max:    int64(l.Max),
		burst:  burstOf(l),
		cost:   costOf(q),
	}
}

// placeKeys sets the storage key of each ask of reqs not in
// runtime.ModeOff. It comes after the deny cache, whose answers cost no
// allocation.
func (r *Limiter) placeKeys(asks []ask, reqs []runtime.Request) {
	for i, q := range reqs {
		if q.Limit.Mode != runtime.ModeOff {
			asks[i].key = r.storageKey(q.Limit, q.Key)
		}
	}
}

// resolve appends reqs to asks, resolved whole.
func (r *Limiter) resolve(asks []ask, reqs []runtime.Request) []ask {
	n := len(asks)
	for _, q := range reqs {
		if q.Limit.Mode == runtime.ModeOff {
			asks = append(asks, ask{})
		} else {
			asks = append(asks, resolveLimit(q))
		}
	}
	r.placeKeys(asks[n:], reqs)
	return asks
}

// storageKey returns the key of l's state for key in Redis (see
// storagekey.go).
func (r *Limiter) storageKey(l runtime.Limit, key string) string {
	// Build in a stack buffer when the key is short, so the string is the
	// only allocation.
	var stack [256]byte
	if h := r.cfg.keyHash; h != nil {
		return string(appendHashedStorageKey(stack[:0], h, r.cfg.prefix, specOf(l).tag, l.Name, key))
	}
	return string(appendStorageKey(stack[:0], r.cfg.prefix, specOf(l).tag, l.Name, key))
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
