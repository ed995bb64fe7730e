package memlimit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The model test runs random histories of admissions through Hold,
// settlements down and up, peeks, resets and clock advances on a Limiter
// and on a plain model of each algorithm's semantics (as runtime.Algorithm
// states them), and requires the same Decisions from both. An audit,
// written apart from the models, checks that no key admits beyond its
// limit more than the charges of its settlements explain.

// keyModel is one algorithm's model of one key: check and commit as a
// call of cost c sees them, at now in µs, and what settlement does.
type keyModel interface {
	check(now, c int64) runtime.Decision
	// commit records an admitted call; it returns its Decision and
	// receipt. A charge of e units is a commit of cost e, room or not.
	commit(now, c int64) (runtime.Decision, int64)
	giveBack(now, receipt, d int64)
	reset()
	// bound audits events, the history of the key since its last reset,
	// at an admission at now: see auditEvent.
	bound(t *testing.T, events []auditEvent, now int64)
}

// mparams are a limit's numbers in µs and units.
type mparams struct{ w, max, burst int64 }

func mparamsOf(l runtime.Limit) mparams {
	b := int64(l.Burst)
	if b == 0 {
		b = int64(l.Max)
	}
	return mparams{w: l.Window.Microseconds(), max: int64(l.Max), burst: b}
}

// mfloor and mceil divide rounding down and up, b > 0.
func mfloor(a, b int64) int64 {
	if a < 0 {
		return -((-a + b - 1) / b)
	}
	return a / b
}

func mceil(a, b int64) int64 { return -mfloor(-a, b) }

func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }

// logModel: every recorded unit's time; a unit counts while it is later
// than now-w.
type logModel struct {
	mparams
	times []int64
}

func (m *logModel) live(now int64) []int64 {
	var l []int64
	for _, t := range m.times {
		if t > now-m.w {
			l = append(l, t)
		}
	}
	return l
}

func (m *logModel) check(now, c int64) runtime.Decision {
	l := m.live(now)
	n := int64(len(l))
	d := runtime.Decision{Remaining: int(max(0, m.max-n))}
	if n > 0 {
		d.ResetAfter = us(l[n-1] + m.w - now)
	}
	if n+c > m.max {
		d.RetryAfter = us(l[n+c-m.max-1] + m.w - now)
		return d
	}
	d.Allowed = true
	return d
}

func (m *logModel) commit(now, c int64) (runtime.Decision, int64) {
	n := int64(len(m.live(now)))
	t := now
	if len(m.times) > 0 && m.times[len(m.times)-1] >= t {
		t = m.times[len(m.times)-1] + 1
	}
	for range c {
		m.times = append(m.times, t)
	}
	return runtime.Decision{Allowed: true, Remaining: int(m.max - n - c), ResetAfter: us(t + m.w - now)}, t
}

func (m *logModel) giveBack(now, receipt, d int64) {
	if receipt <= now-m.w {
		return
	}
	for i := 0; i < len(m.times) && d > 0; {
		if m.times[i] == receipt {
			m.times = slices.Delete(m.times, i, i+1)
			d--
			continue
		}
		i++
	}
}

func (m *logModel) reset() { m.times = nil }

// bound: no span of length w holds more than max.
func (m *logModel) bound(t *testing.T, events []auditEvent, now int64) {
	require.LessOrEqual(t, sumWhere(events, func(at int64) bool { return at > now-m.w }), m.max)
}

// windowModel: counts per bucket of ceil(w/10) µs; a bucket counts while
// it is at most 10 before the current one.
type windowModel struct {
	mparams
	counts map[int64]int64
}

func (m *windowModel) b() int64 { return mceil(m.w, 10) }

// live returns the buckets that count, non-empty, in order, their total,
// and the bucket a commit counts in.
func (m *windowModel) live(now int64) (idx []int64, count, into int64) {
	cur := mfloor(now, m.b())
	into = cur
	for j, n := range m.counts {
		if j >= cur-10 && n > 0 {
			idx = append(idx, j)
			count += n
			into = max(into, j)
		}
	}
	slices.Sort(idx)
	return idx, count, into
}

func (m *windowModel) check(now, c int64) runtime.Decision {
	idx, count, _ := m.live(now)
	d := runtime.Decision{Remaining: int(max(0, m.max-count))}
	if len(idx) > 0 {
		d.ResetAfter = us((idx[len(idx)-1]+11)*m.b() - now)
	}
	if count+c > m.max {
		need := count + c - m.max
		for _, j := range idx {
			if need -= m.counts[j]; need <= 0 {
				d.RetryAfter = us((j+11)*m.b() - now)
				break
			}
		}
		return d
	}
	d.Allowed = true
	return d
}

func (m *windowModel) commit(now, c int64) (runtime.Decision, int64) {
	_, count, into := m.live(now)
	if m.counts == nil {
		m.counts = map[int64]int64{}
	}
	m.counts[into] += c
	return runtime.Decision{Allowed: true, Remaining: int(m.max - count - c), ResetAfter: us((into+11)*m.b() - now)}, into
}

func (m *windowModel) giveBack(now, receipt, d int64) {
	if receipt >= mfloor(now, m.b())-10 {
		if n, ok := m.counts[receipt]; ok {
			m.counts[receipt] = max(0, n-d)
		}
	}
}

func (m *windowModel) reset() { m.counts = nil }

// bound: as the sliding log's, which counts less.
func (m *windowModel) bound(t *testing.T, events []auditEvent, now int64) {
	(&logModel{mparams: m.mparams}).bound(t, events, now)
}

// fixedModel: one count, of window win.
type fixedModel struct {
	mparams
	win, n int64
	set    bool
}

// current returns the window counted in at now and its count.
func (m *fixedModel) current(now int64) (win, count int64) {
	win = mfloor(now, m.w)
	if m.set && m.win >= win {
		return m.win, m.n
	}
	return win, 0
}

func (m *fixedModel) check(now, c int64) runtime.Decision {
	win, count := m.current(now)
	ends := us((win+1)*m.w - now)
	d := runtime.Decision{Remaining: int(max(0, m.max-count))}
	if count > 0 {
		d.ResetAfter = ends
	}
	if count+c > m.max {
		d.RetryAfter = ends
		return d
	}
	d.Allowed = true
	return d
}

func (m *fixedModel) commit(now, c int64) (runtime.Decision, int64) {
	win, count := m.current(now)
	m.win, m.n, m.set = win, count+c, true
	return runtime.Decision{Allowed: true, Remaining: int(m.max - count - c), ResetAfter: us((win+1)*m.w - now)}, win
}

func (m *fixedModel) giveBack(now, receipt, d int64) {
	if m.set && m.win == receipt {
		m.n = max(0, m.n-d)
	}
}

func (m *fixedModel) reset() { m.set = false }

func (m *fixedModel) bound(t *testing.T, events []auditEvent, now int64) {
	win := mfloor(now, m.w)
	require.LessOrEqual(t, sumWhere(events, func(at int64) bool { return mfloor(at, m.w) == win }), m.max)
}

// bucketModel: the level in 1/w tokens at time at; unset is full.
type bucketModel struct {
	mparams
	level, at int64
	set       bool
}

func (m *bucketModel) now(now int64) (level, at int64) {
	if !m.set {
		return m.burst * m.w, now
	}
	if now <= m.at {
		return m.level, m.at // a clock behind the last write refills nothing
	}
	return min(m.burst*m.w, m.level+(now-m.at)*m.max), now
}

func (m *bucketModel) check(now, c int64) runtime.Decision {
	l, at := m.now(now)
	d := runtime.Decision{Remaining: int(max(0, mfloor(l, m.w))), ResetAfter: us(at - now + mceil(m.burst*m.w-l, m.max))}
	if l < c*m.w {
		d.RetryAfter = us(at - now + mceil(c*m.w-l, m.max))
		return d
	}
	d.Allowed = true
	return d
}

func (m *bucketModel) commit(now, c int64) (runtime.Decision, int64) {
	l, at := m.now(now)
	m.level, m.at, m.set = l-c*m.w, at, true
	return runtime.Decision{Allowed: true, Remaining: int(mfloor(l, m.w) - c), ResetAfter: us(at - now + mceil(m.burst*m.w-m.level, m.max))}, 0
}

func (m *bucketModel) giveBack(now, receipt, d int64) {
	if m.set {
		m.level = min(m.burst*m.w, m.level+d*m.w)
	}
}

func (m *bucketModel) reset() { m.set = false }

func (m *bucketModel) bound(t *testing.T, events []auditEvent, now int64) {
	// Any span from an event to now admits at most burst plus what
	// refills in it: sum*w <= burst*w + span*max.
	var sum int64
	for i := len(events) - 1; i >= 0; i-- {
		sum += events[i].units
		require.LessOrEqual(t, sum*m.w, m.burst*m.w+(now-events[i].at)*m.max, "since event %d", i)
	}
}

// gcraModel: the theoretical arrival time; unset is none.
type gcraModel struct {
	mparams
	tat int64
	set bool
}

func (m *gcraModel) interval() int64 { return mceil(m.w, m.max) }

func (m *gcraModel) from(now int64) int64 {
	if m.set && m.tat > now {
		return m.tat
	}
	return now
}

func (m *gcraModel) check(now, c int64) runtime.Decision {
	iv := m.interval()
	tat := m.from(now)
	d := runtime.Decision{Remaining: int(max(0, mfloor(m.burst*iv-(tat-now), iv))), ResetAfter: us(tat - now)}
	if next := tat + c*iv; next-now > m.burst*iv {
		d.RetryAfter = us(next - m.burst*iv - now)
		return d
	}
	d.Allowed = true
	return d
}

func (m *gcraModel) commit(now, c int64) (runtime.Decision, int64) {
	iv := m.interval()
	tat := m.from(now)
	m.tat, m.set = tat+c*iv, true
	return runtime.Decision{Allowed: true, Remaining: int(mfloor(m.burst*iv-(tat-now), iv) - c), ResetAfter: us(m.tat - now)}, 0
}

func (m *gcraModel) giveBack(now, receipt, d int64) {
	if m.set {
		m.tat = max(now, m.tat-d*m.interval())
	}
}

func (m *gcraModel) reset() { m.set = false }

func (m *gcraModel) bound(t *testing.T, events []auditEvent, now int64) {
	// sum*interval <= burst*interval + span.
	iv := m.interval()
	var sum int64
	for i := len(events) - 1; i >= 0; i-- {
		sum += events[i].units
		require.LessOrEqual(t, sum*iv, m.burst*iv+(now-events[i].at), "since event %d", i)
	}
}

func newKeyModel(l runtime.Limit) keyModel {
	p := mparamsOf(l)
	switch l.Algorithm {
	case runtime.SlidingLog:
		return &logModel{mparams: p}
	case runtime.SlidingWindow:
		return &windowModel{mparams: p}
	case runtime.FixedWindow:
		return &fixedModel{mparams: p}
	case runtime.TokenBucket:
		return &bucketModel{mparams: p}
	}
	return &gcraModel{mparams: p}
}

// auditEvent is a change of a key's units, in its order: +cost at an
// admission, -d at a give-back, +e at a charge. at is when: the
// settlement's time, but for a give-back of the windowed algorithms, which
// takes units from where the call recorded them, the admission's. A
// give-back by a call admitted before the key's last reset counts in full,
// though it takes back at most what it finds: the audit only gets looser.
type auditEvent struct{ at, units int64 }

func sumWhere(events []auditEvent, in func(at int64) bool) int64 {
	var sum int64
	for _, e := range events {
		if in(e.at) {
			sum += e.units
		}
	}
	return sum
}

// modelKey is one (limit, key) of a history: its model and audit trail.
type modelKey struct {
	m      keyModel
	events []auditEvent
}

// modelHold is an admitted call of a history, as the model saw it.
type modelHold struct {
	h        runtime.Hold
	reqs     []runtime.Request
	receipts []int64
	recorded []bool
	at       int64
}

func TestHoldModel(t *testing.T) {
	for _, algo := range runtime.Algorithms() {
		for _, seed := range []uint64{1, 2, 3, 20261205} {
			t.Run(fmt.Sprintf("%s/%d", algo, seed), func(t *testing.T) {
				runHoldModel(t, algo, seed, 400)
			})
		}
	}
}

func runHoldModel(t *testing.T, algo runtime.Algorithm, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, uint64(len(algo))))
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	const w = 1000
	a := runtime.Limit{Name: "a", Window: us(w), Max: 5, Algorithm: algo}
	b := runtime.Limit{Name: "b", Window: us(w), Max: 3, Algorithm: algo}
	if algo == runtime.TokenBucket || algo == runtime.GCRA {
		a.Burst, b.Burst = 7, 4
	}
	keys := map[string]*modelKey{}
	keyOf := func(r runtime.Request) *modelKey {
		id := r.Limit.Name + "/" + r.Key
		if keys[id] == nil {
			keys[id] = &modelKey{m: newKeyModel(r.Limit)}
		}
		return keys[id]
	}
	windowed := algo != runtime.TokenBucket && algo != runtime.GCRA
	// call returns a random call: a on key x or y, and maybe b on the same
	// key in any mode.
	call := func() []runtime.Request {
		key := []string{"x", "y"}[rng.IntN(2)]
		reqs := []runtime.Request{{Limit: a, Key: key, Cost: rng.Int64N(int64(a.Capacity())) + 1}}
		if rng.IntN(2) == 0 {
			bl := b
			bl.Mode = runtime.Mode(rng.IntN(3))
			reqs = append(reqs, runtime.Request{Limit: bl, Key: key, Cost: rng.Int64N(int64(b.Capacity())) + 1})
		}
		if rng.IntN(4) == 0 {
			reqs[0].Cost = 0 // meaning 1
		}
		return reqs
	}
	// expect returns the model's Decisions for reqs, without recording.
	expect := func(now int64, reqs []runtime.Request) runtime.Decisions {
		ds := runtime.Decisions{Allowed: true}
		for _, r := range reqs {
			d := runtime.Decision{Allowed: true, Remaining: r.Limit.Capacity()}
			if r.Limit.Mode != runtime.ModeOff {
				d = keyOf(r).m.check(now, costOf(r))
			}
			ds.Each = append(ds.Each, d)
			ds.Allowed = ds.Allowed && (d.Allowed || r.Limit.Mode != runtime.ModeEnforce)
		}
		return ds
	}
	var holds []*modelHold
	var history []string
	var admitted, denied, givenBack, charged int
	defer func() {
		t.Logf("%d admitted, %d denied, %d limits given back, %d charged", admitted, denied, givenBack, charged)
		if t.Failed() {
			t.Logf("history (last 30 of %d):\n%s", len(history), joinLast(history, 30))
		}
	}()
	for step := range steps {
		now := clock.Now().UnixMicro()
		switch op := rng.IntN(100); {
		case op < 25:
			adv := []int64{0, 1, 37, rng.Int64N(w / 2), w + rng.Int64N(w)}[rng.IntN(5)]
			clock.Advance(us(adv))
			history = append(history, fmt.Sprintf("%d: advance %dµs", step, adv))

		case op < 55:
			reqs := call()
			want := expect(now, reqs)
			var h modelHold
			if want.Allowed {
				h = modelHold{reqs: reqs, receipts: make([]int64, len(reqs)), recorded: make([]bool, len(reqs)), at: now}
				for i, r := range reqs {
					if r.Limit.Mode == runtime.ModeOff || !want.Each[i].Allowed {
						continue
					}
					k := keyOf(r)
					want.Each[i], h.receipts[i] = k.m.commit(now, costOf(r))
					h.recorded[i] = true
					k.events = append(k.events, auditEvent{at: now, units: costOf(r)})
					k.m.bound(t, k.events, now)
				}
			}
			ds, got, err := lim.Hold(ctx, reqs...)
			history = append(history, fmt.Sprintf("%d: hold %v -> %v", step, reqs, ds))
			require.NoError(t, err)
			require.Equal(t, want, ds, "step %d: hold %v", step, reqs)
			if !want.Allowed {
				require.Nil(t, got)
				denied++
				continue
			}
			admitted++
			require.NotNil(t, got)
			h.h = got
			holds = append(holds, &h)

		case op < 80:
			if len(holds) == 0 {
				continue
			}
			i := rng.IntN(len(holds))
			h := holds[i]
			used := make([]int64, len(h.reqs))
			for j, r := range h.reqs {
				c := int64(r.Limit.Capacity())
				used[j] = []int64{0, costOf(r), rng.Int64N(c + 4), c + 5}[rng.IntN(4)]
			}
			history = append(history, fmt.Sprintf("%d: settle hold of %d at %v", step, h.at, used))
			if rng.IntN(10) == 0 {
				// An invalid settlement leaves the Hold to be settled.
				require.Error(t, h.h.Settle(ctx, append(used, 1)...))
			}
			require.NoError(t, h.h.Settle(ctx, used...))
			for j, r := range h.reqs {
				if !h.recorded[j] {
					continue
				}
				k := keyOf(r)
				u, c := min(used[j], int64(r.Limit.Capacity())), costOf(r)
				switch {
				case u < c:
					givenBack++
					k.m.giveBack(now, h.receipts[j], c-u)
					at := now
					if windowed {
						at = h.at
					}
					k.events = append(k.events, auditEvent{at: at, units: u - c})
				case u > c:
					charged++
					k.m.commit(now, u-c)
					k.events = append(k.events, auditEvent{at: now, units: u - c})
				}
			}
			if rng.IntN(5) == 0 {
				require.ErrorIs(t, h.h.Settle(ctx, used...), runtime.ErrSettled)
			}
			holds = slices.Delete(holds, i, i+1)

		case op < 95:
			reqs := call()
			n := lim.Len()
			ds, err := lim.Peek(ctx, reqs...)
			history = append(history, fmt.Sprintf("%d: peek %v -> %v", step, reqs, ds))
			require.NoError(t, err)
			require.Equal(t, expect(now, reqs), ds, "step %d: peek %v", step, reqs)
			require.Equal(t, n, lim.Len(), "a peek added a key")

		default:
			reqs := call()
			history = append(history, fmt.Sprintf("%d: reset %v", step, reqs))
			require.NoError(t, lim.Reset(ctx, reqs...))
			for _, r := range reqs {
				k := keyOf(r)
				k.m.reset()
				k.events = nil
			}
		}
	}
}

func joinLast(lines []string, n int) string {
	s := ""
	for _, l := range lines[max(0, len(lines)-n):] {
		s += l + "\n"
	}
	return s
}
