package redislimit

import (
	"encoding/binary"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// An ask is one request as the scripts read it, resolved once when the
// call is decided: its storage key and its numbers in lua/main.lua's
// layout. Everything between Decide and the reply reads asks, never the
// runtime.Request again.
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

// appendNums appends to nums the numbers of the requests of d at idx, in
// the layout of lua/main.lua's ARGV[2]; with receipts, for a refund. They
// go as one string of little-endian 64-bit integers: one argument per call
// rather than six per limit, and the cheapest form for the script to read
// (struct.unpack).
func appendNums(nums []byte, d *decision, idx []int, receipts bool) []byte {
	le := binary.LittleEndian
	nums = le.AppendUint64(nums, uint64(d.now))
	nums = le.AppendUint64(nums, uint64(len(idx)))
	for _, i := range idx {
		a := &d.asks[i]
		nums = le.AppendUint64(nums, uint64(a.code))
		nums = le.AppendUint64(nums, uint64(a.window))
		nums = le.AppendUint64(nums, uint64(a.max))
		nums = le.AppendUint64(nums, uint64(a.burst))
		nums = le.AppendUint64(nums, uint64(a.cost))
		if receipts {
			nums = le.AppendUint64(nums, uint64(d.receipts[i]))
		}
	}
	return nums
}

// A uniform script call (modeUniform) decides calls of one enforced
// limit each, the same limit for all: the commonest batch, and every lone
// call of one limit. The script reads the limit's numbers once, and
// answers three numbers per call, as it needs no receipt (a call within
// one slot is never refunded) and its calls are committed exactly when
// allowed.

// uniformAsk returns the limit that every call of batch decides alone,
// enforced, or nil if they do not.
func uniformAsk(batch []*call) *ask {
	a := &batch[0].d.asks[0]
	if !a.uniform(len(batch[0].idx)) {
		return nil
	}
	for _, c := range batch[1:] {
		if len(c.idx) != 1 || !a.sameLimit(&c.d.asks[0]) {
			return nil
		}
	}
	return a
}

// uniform reports whether a, of a call of n limits, can be decided in a
// uniform script call.
func (a *ask) uniform(n int) bool { return n == 1 && a.code < shadowFlag }

// sameLimit reports whether a and b are decided by the same numbers.
func (a *ask) sameLimit(b *ask) bool {
	return a.code == b.code && a.window == b.window && a.max == b.max && a.burst == b.burst && a.cost == b.cost
}

// appendUniform appends to nums the numbers of a uniform script call of
// the limit a at the times nows: a's numbers, then one now when every call
// shares it, one per call otherwise.
func appendUniform(nums []byte, a *ask, nows func(i int) int64, calls int) []byte {
	le := binary.LittleEndian
	for _, n := range [...]int64{a.code, a.window, a.max, a.burst, a.cost} {
		nums = le.AppendUint64(nums, uint64(n))
	}
	first := nows(0)
	same := true
	for i := 1; i < calls && same; i++ {
		same = nows(i) == first
	}
	if same {
		return le.AppendUint64(nums, uint64(first))
	}
	for i := range calls {
		nums = le.AppendUint64(nums, uint64(nows(i)))
	}
	return nums
}

// uniformVerdict reads one call's numbers of a uniform script call's reply:
// remaining*2 + allowed, retry and reset. The script forms remaining*2 +
// allowed as a double, exact because remaining is below the limit's
// capacity, at most runtime.MaxUnits (2^52), so the sum is below 2^53.
func uniformVerdict(f []int64) verdict {
	return verdict{ok: f[0]&1 == 1, remaining: f[0] >> 1, retry: f[1], reset: f[2]}
}

// uniformFields is how many numbers a uniform reply holds per call.
const uniformFields = 3

// readCall reads one call's part of a script reply into the verdicts (and
// receipts, when d keeps them) of the requests of d at idx, and returns
// what follows it.
func readCall(res []int64, d *decision, idx []int) (committed bool, rest []int64, err error) {
	if len(res) < 1+5*len(idx) {
		return false, nil, errReply(len(res))
	}
	for j, i := range idx {
		f := res[1+5*j:]
		d.vs[i] = verdict{ok: f[0] == 1, remaining: f[1], retry: f[2], reset: f[3]}
		if d.receipts != nil {
			d.receipts[i] = f[4]
		}
	}
	return res[0] == 1, res[1+5*len(idx):], nil
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
