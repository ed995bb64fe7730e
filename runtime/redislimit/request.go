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
	// prev and next are, for a calendar limit (codeCalendar), the start
	// of the window before the current one and the end of the one after
	// it; window and burst then hold the current window's start and end
	// (see Limiter.resolveCalendars).
	prev, next int64
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
	// need refunds, or is held (see Limiter.Hold), to be settled.
	receipts []int64
	// used is, for a settle, the units each request used; nil for a
	// refund, which settles at 0.
	used []int64
	// op is what the call asks of the script.
	op callOp
}

// A callOp is what one call asks of the script: a decision, a check that
// records nothing (Peek), a settle of a held call (Hold.Settle), the
// renewal of a held call's permits (see permit.go), or the decision of a
// call that waits (see holdwait.go). Each call of a batch
// carries its own (see appendNums), so that peeks, settles and renewals
// share round trips with decisions.
type callOp uint8

const (
	opDecide callOp = iota
	opCheck
	opSettle
	opRenew
	// opWait decides a call that waits for room (see holdwait.go): each
	// limit also carries minus the ticket of the call's place in line for
	// its permits, and how long to keep the place (used).
	opWait
	// opRelease settles a held call's limits of one slot that are all
	// concurrency limits: their permits are released by id, with no
	// marker, as an id is never given twice (see lua/concurrency.lua).
	opRelease
)

// sendsReceipts reports whether a call of op o names the admissions it
// acts on by their receipts.
func (o callOp) sendsReceipts() bool { return o != opDecide && o != opCheck }

// decides reports whether a call of op o is decided, and its receipts come
// back.
func (o callOp) decides() bool { return o == opDecide || o == opWait }

// opShift is what a call's op is multiplied by in its count of limits,
// which is far below it (see lua/main.lua).
const opShift = 1 << 16

// mode returns the script mode of a call of op d.op sent alone.
func (d *resolvedCall) mode() scriptMode {
	switch d.op {
	case opCheck:
		return modeCheck
	case opSettle:
		return modeSettle
	case opRenew:
		return modeRenew
	}
	return modeDecide
}

// resolveLimits appends reqs' numbers to asks, and gives each request in
// runtime.ModeOff its verdict in vs. It reports whether any request is
// not off, that is, whether Redis has anything to decide.
func resolveLimits(asks []ask, reqs []runtime.Request, vs []verdict) ([]ask, bool) {
	on := false
	for i := range reqs {
		q := &reqs[i]
		asks = append(asks, ask{})
		if q.Limit.Mode == runtime.ModeOff {
			vs[i] = offVerdict(q.Limit)
			continue
		}
		on = true
		resolveLimit(&asks[len(asks)-1], q)
	}
	return asks, on
}

// resolve appends reqs to asks, resolved whole.
func (r *Limiter) resolve(asks []ask, reqs []runtime.Request) []ask {
	n := len(asks)
	for i := range reqs {
		asks = append(asks, ask{})
		if reqs[i].Limit.Mode != runtime.ModeOff {
			resolveLimit(&asks[len(asks)-1], &reqs[i])
		}
	}
	r.placeKeys(asks[n:], reqs)
	return asks
}
