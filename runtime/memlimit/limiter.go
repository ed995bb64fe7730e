package memlimit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Limiter is a runtime.Limiter that keeps its counts in the process; it is
// safe for concurrent use. It makes the decisions runtime/redislimit's
// Limiter makes on the same clock, so it serves tests and single-instance
// programs, and is a Redis limiter's fallback during an outage. Its keys
// hold at most WithMaxMemory's budget; keys whose admissions have all
// stopped counting are evicted first.
type Limiter struct {
	// A decision costs no allocation once its key is held: the key is
	// hashed once, that hash picks one of 64 shards and finds the key's
	// entry in the shard's table without a lock, and the entry holds the
	// algorithm's state in the same allocation. Calls on one key are
	// serialised by the key's entry alone (GCRA's by a compare-and-swap of
	// its one number), so a call on a held key never waits for calls on
	// other keys; a shard's lock is taken only to add and evict keys.
	shards [shardCount]shard

	// clock is WithClock's clock, or nil for the default one. The default
	// reads the monotonic clock only, counted from epoch: that costs half
	// of what time.Now costs (which also reads the wall clock), and the
	// clock then never steps back when the wall clock is set. It starts at
	// the wall clock's time when the limiter is made and advances as the
	// monotonic clock does.
	//
	// Either clock is read once a call holds its key's entry (GCRA: once
	// it has loaded the arrival time it will swap; see decideHeld), so
	// that the calls that change a key's state do so at times that never
	// go back, in the order they change it.
	clock       func() time.Time
	epoch       time.Time
	epochMicros int64

	// keySeed seeds the hash of keys. It is random per limiter, so that no
	// caller can choose keys that collide.
	keySeed maphash.Seed

	// maxBytes is WithMaxMemory's budget.
	maxBytes int

	// idle says an idle sweep is due (see keepTidy).
	idle atomic.Bool

	// waitHook, when tests set it, runs each time a HoldWait call was
	// denied and is about to wait, its queues joined.
	waitHook func()

	// zones holds the zones of calendar limits, each loaded once.
	zones runtime.CalendarZones
}

// New returns a Limiter reading the process's monotonic clock, or
// WithClock's, holding at most WithMaxMemory's budget.
func New(opts ...Option) *Limiter {
	m := &Limiter{keySeed: maphash.MakeSeed()}
	for _, o := range opts {
		if o != nil {
			o(m)
		}
	}
	m.epoch = time.Now()
	m.epochMicros = m.epoch.UnixMicro()
	if m.maxBytes <= 0 {
		m.maxBytes = defaultMaxMemory
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.tab.Store(newTable(minSlots))
		s.sweepAt = minSweep
		s.bytes = slotBytes * minSlots
		s.budget = int64(m.maxBytes / shardCount)
		s.expiresFrom = math.MaxInt64
	}
	return m
}

// defaultMaxMemory is WithMaxMemory's default.
const defaultMaxMemory = 64 << 20

// ErrFull is the Decisions.Cause of a decision for which the limiter, at
// its WithMaxMemory budget, evicted a key whose admissions still counted:
// that key may now be admitted beyond its limit. The call itself was
// decided as usual. Seen outside a flood of keys, it means the budget is
// too small for the keys in use.
var ErrFull = errors.New("ratelimit: memory limiter full: admissions of other keys were forgotten to make room; raise WithMaxMemory")

// memoryFull returns the Cause of a decision that forgot, or did not
// forget, admissions that still counted.
func memoryFull(forgot bool) error {
	if forgot {
		return ErrFull
	}
	return nil
}

// commit commits v on e, which the call holds, and accounts for the growth
// of e's state.
func (s *shard) commit(e *entry, now int64, p params, v *verdict) {
	if grew := e.commit(now, p, v); grew != 0 {
		s.grown.Add(grew)
	}
}

// now returns the time in µs: WithClock's, or the default clock's.
func (m *Limiter) now() int64 {
	if m.clock != nil {
		return m.clock().UnixMicro()
	}
	return m.epochMicros + int64(time.Since(m.epoch)/time.Microsecond)
}

// Allow decides a call of cost 1 under l for key and returns l's Decision:
// it is Decide for one request, without the Decisions, so a limit in
// ModeShadow records the call only if it has room, and one in ModeOff is
// not consulted.
func (m *Limiter) Allow(ctx context.Context, l runtime.Limit, key string) (runtime.Decision, error) {
	if l.Algorithm == runtime.Concurrency {
		return runtime.Decision{}, needsHold(l)
	}
	if l.Mode == runtime.ModeOff {
		ds, err := m.Decide(ctx, runtime.Request{Limit: l, Key: key})
		if err != nil {
			return runtime.Decision{}, err
		}
		return ds.Each[0], nil
	}
	d, _, err := m.allowN(ctx, l, key, 1)
	return d, err
}

// allowN decides one request with no allocation once its key is held.
// forgot reports whether making room for the key evicted one whose
// admissions still counted.
func (m *Limiter) allowN(ctx context.Context, l runtime.Limit, key string, n int64) (_ runtime.Decision, forgot bool, _ error) {
	if err := runtime.Validate(runtime.Request{Limit: l, Key: key, Cost: n}); err != nil {
		return runtime.Decision{}, false, err
	}
	if err := ctx.Err(); err != nil {
		return runtime.Decision{}, false, err
	}
	p, err := m.paramsOf(l, n)
	if err != nil {
		return runtime.Decision{}, false, err
	}
	if len(l.Name) > maxLiteralLen || len(key) > maxLiteralLen {
		v, forgot := m.decideLong(l, key, p)
		return v.decision(), forgot, nil
	}
	k := storeKey{algo: algoOf(l), name: l.Name, key: key}
	h := m.hash(&k)
	v, forgot := m.decide(&m.shards[shardOf(h)], h, &k, l.Name, p)
	return v.decision(), forgot, nil
}

// decideLong decides a valid call whose name or key is long, for allowN:
// it hashes the long parts.
func (m *Limiter) decideLong(l runtime.Limit, key string, p params) (verdict, bool) {
	var d keyDigests
	k := newStoreKey(algoOf(l), l.Name, key, &d)
	h := m.hash(&k)
	return m.decide(&m.shards[shardOf(h)], h, &k, l.Name, p)
}

// costOf returns r's cost, 0 meaning 1.
func costOf(r runtime.Request) int64 {
	if r.Cost == 0 {
		return 1
	}
	return r.Cost
}

// decide runs one call on shard s: on the key's entry alone when the
// shard's table holds it, under the shard's lock when the key must be
// added or its entry was just evicted. name is the limit's name as the
// caller gave it. forgot is add's.
func (m *Limiter) decide(s *shard, h uint64, k *storeKey, name string, p params) (_ verdict, forgot bool) {
	if e := s.tab.Load().find(h, k); e != nil {
		if v, now, ok := m.decideHeld(s, e, p); ok {
			if now >= s.nextSweep.Load() {
				m.tidy(s)
			}
			return v, false
		}
	}
	return m.decideLocked(s, h, k, name, p)
}

// decideHeld decides a call on e without the shard's lock. ok is false if
// e was evicted (or, for GCRA, is claimed by a call under the shard's
// lock): the call must then look its key up again under that lock. now is
// the time of the decision. Either way e is marked used, denials included.
func (m *Limiter) decideHeld(s *shard, e *entry, p params) (v verdict, now int64, ok bool) {
	if e.algo == algoGCRA {
		e.w.visit()
		g := stateOf[gcra](e)
		for {
			tat := g.tat.Load()
			if tat == gcraClaimed || tat == gcraDead {
				return verdict{}, 0, false
			}
			// The clock is read after tat: the call that stored tat read
			// its time before storing it, so the calls that change the
			// state decide at times that never go back, in the order of
			// their swaps.
			now = m.now()
			v = gcraCheck(tat, now, p)
			if !v.ok {
				return v, now, true
			}
			if g.tat.CompareAndSwap(tat, v.scratch) {
				gcraCommit(now, p, &v)
				return v, now, true
			}
		}
	}
	if !e.w.lock() {
		return verdict{}, 0, false
	}
	now = m.now()
	v = e.check(now, p)
	if v.ok {
		s.commit(e, now, p, &v)
	}
	e.w.unlock()
	return v, now, true
}

// decideLocked is decide under the shard's lock, adding the key if needed.
func (m *Limiter) decideLocked(s *shard, h uint64, k *storeKey, name string, p params) (_ verdict, forgot bool) {
	s.mu.Lock()
	now := m.now()
	s.tidy(now)
	e := s.tab.Load().find(h, k)
	used := e != nil
	if e == nil {
		// A new entry is held before it goes in the table: no other call
		// has decided on it, so the time read above serves.
		e, forgot = s.add(h, k, name, true, now, nil)
		m.keepTidy()
	} else {
		e.acquire()
		now = m.now()
	}
	v := e.check(now, p)
	if v.ok {
		s.commit(e, now, p, &v)
	}
	s.expiresFrom = min(s.expiresFrom, e.expiry())
	e.release(used)
	s.mu.Unlock()
	return v, forgot
}

// tidy runs s's sweep if one is due.
func (m *Limiter) tidy(s *shard) {
	s.mu.Lock()
	s.tidy(m.now())
	s.mu.Unlock()
}

// Decide decides a call as runtime.Limiter's Decide states, modes
// included. The shards of all keys are locked together, in a fixed order,
// and then the keys' entries, so the decision is atomic.
//
// It refuses a call with a runtime.Concurrency limit, whatever its mode,
// with an error: the permit it would take has no Hold to release it (see
// Hold).
func (m *Limiter) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	for i := range reqs {
		if reqs[i].Limit.Algorithm == runtime.Concurrency {
			return runtime.Decisions{}, needsHold(reqs[i].Limit)
		}
	}
	if len(reqs) == 1 && reqs[0].Limit.Mode != runtime.ModeOff {
		// A lone limit records the call exactly when it has room, which is
		// the rule for a shadow limit too.
		d, forgot, err := m.allowN(ctx, reqs[0].Limit, reqs[0].Key, costOf(reqs[0]))
		if err != nil {
			return runtime.Decisions{}, err
		}
		return runtime.Decisions{Allowed: d.Allowed || reqs[0].Limit.Mode == runtime.ModeShadow, Each: []runtime.Decision{d}, Cause: memoryFull(forgot)}, nil
	}
	return m.decideMany(ctx, reqs, nil, false, nil)
}

// needsHold is the error of deciding a concurrency limit without Hold. It
// names the limit only: a key may be personal data.
func needsHold(l runtime.Limit) error {
	return fmt.Errorf("ratelimit: limit %q is a concurrency limit, which needs Hold: call runtime.Admit, run the call under runtime.Keep, and settle its Hold once the call returns; Decide would take a permit that nothing releases", l.Name)
}

// decideMany is Decide for any call, under the shards' locks. When
// held is not nil, it receives what each limit recorded (see hold): its
// receipt, and for a concurrency limit the entry holding its permit. With
// peek, nothing is recorded and no key is added: each limit is
// checked as it stands, an unknown key as an empty one.
//
// A Concurrency limit admits a call only if its key's permits live, the
// waiters counted ahead of the call (see shard.ahead) and the call fit in
// Max. w is the HoldWait call deciding, or nil: once admitted it leaves
// its queues; denied, it joins the queue of each enforced Concurrency
// limit that denied it.
func (m *Limiter) decideMany(ctx context.Context, reqs []runtime.Request, held []heldLimit, peek bool, w *waiter) (runtime.Decisions, error) {
	if err := runtime.Validate(reqs...); err != nil {
		return runtime.Decisions{}, err
	}
	if err := ctx.Err(); err != nil {
		return runtime.Decisions{}, err
	}
	// Each key is built and hashed once, as hashing a long one is worth
	// doing only once; up to four requests with short names and keys need
	// no allocation but the Decisions.
	const inline = 4
	var (
		keyBuf   [inline]storeKey
		hashBuf  [inline]uint64
		orderBuf [inline]uint64
		entBuf   [inline]*entry
		vBuf     [inline]verdict
		pBuf     [inline]params
		usedBuf  [inline]bool
	)
	keys, hashes, order := keyBuf[:0], hashBuf[:0], orderBuf[:0]
	entries, vs, ps, used := entBuf[:0], vBuf[:0], pBuf[:0], usedBuf[:0]
	if len(reqs) > inline {
		keys = make([]storeKey, 0, len(reqs))
		hashes = make([]uint64, 0, len(reqs))
		order = make([]uint64, 0, len(reqs))
		entries = make([]*entry, 0, len(reqs))
		vs = make([]verdict, 0, len(reqs))
		ps = make([]params, 0, len(reqs))
		used = make([]bool, 0, len(reqs))
	}
	for i, r := range reqs {
		algo := algoOf(r.Limit)
		p, err := m.paramsOf(r.Limit, costOf(r))
		if err != nil {
			return runtime.Decisions{}, err
		}
		if r.Limit.Mode == runtime.ModeOff {
			// Not consulted: no key, no shard, no entry.
			keys, hashes, ps = append(keys, storeKey{}), append(hashes, 0), append(ps, p)
			continue
		}
		var d *keyDigests
		if len(r.Limit.Name) > maxLiteralLen || len(r.Key) > maxLiteralLen {
			// Rare enough to allocate: a digest in a stack array would
			// have to outlive this iteration.
			d = new(keyDigests)
		}
		keys = append(keys, newStoreKey(algo, r.Limit.Name, r.Key, d))
		h := m.hash(&keys[i])
		hashes = append(hashes, h)
		order = append(order, shardOf(h))
		ps = append(ps, p)
	}
	slices.Sort(order)
	order = slices.Compact(order)
	for _, i := range order {
		m.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range order {
			m.shards[i].mu.Unlock()
		}
	}()

	// Sweep before the first lookup: a sweep between two lookups could
	// delete an expired entry the call already holds, and the admission
	// then recorded in it would be lost.
	now := m.now()
	for _, i := range order {
		if !peek {
			m.shards[i].tidy(now)
		}
	}
	// Making room for a new key evicts none of those already looked up.
	forgot := false
	for i := range reqs {
		if reqs[i].Limit.Mode == runtime.ModeOff {
			entries, used = append(entries, nil), append(used, false)
			continue
		}
		if peek {
			// A peek is no use of the key: its mark stays as it was.
			entries, used = append(entries, m.shards[shardOf(hashes[i])].tab.Load().find(hashes[i], &keys[i])), append(used, false)
			continue
		}
		e, created, f := m.shards[shardOf(hashes[i])].entry(hashes[i], &keys[i], reqs[i].Limit.Name, now, entries)
		if created {
			m.keepTidy()
		}
		entries, used = append(entries, e), append(used, !created)
		forgot = forgot || f
	}
	// Then hold every entry (once, if two requests share one): calls on
	// those keys without the shard's lock wait until the decision is
	// complete. Only calls holding the shards' locks hold several entries,
	// so no two can wait for each other.
	for i, e := range entries {
		if e != nil && !slices.Contains(entries[:i], e) {
			e.acquire()
		}
	}
	// Only enforced limits deny; a shadow limit records an admitted call
	// when it had room, as it would if it were enforced.
	now = m.now()
	all := true
	for i, e := range entries {
		switch {
		case reqs[i].Limit.Mode == runtime.ModeOff:
			vs = append(vs, verdict{ok: true, remaining: int64(reqs[i].Limit.Capacity())})
			continue
		case peek && e == nil:
			vs = append(vs, emptyCheck(keys[i].algo, now, ps[i]))
		case peek:
			vs = append(vs, e.peek(now, ps[i]))
		default:
			vs = append(vs, e.check(now, ps[i]))
		}
		if keys[i].algo == algoConcurrency {
			behind(&vs[i], m.shards[shardOf(hashes[i])].ahead(waitKeyOf(reqs[i]), w), ps[i])
		}
		all = all && (vs[i].ok || reqs[i].Limit.Mode != runtime.ModeEnforce)
	}
	if all && !peek {
		for i, e := range entries {
			if e != nil && vs[i].ok {
				m.shards[shardOf(hashes[i])].commit(e, now, ps[i], &vs[i])
				if held != nil {
					held[i] = heldLimit{receipt: vs[i].scratch, recorded: true}
					if keys[i].algo == algoConcurrency {
						held[i].permit, held[i].shard = e, uint8(shardOf(hashes[i]))
					}
				}
			}
		}
	}
	if w != nil && !peek {
		m.queue(reqs, entries, hashes, vs, all, w)
	}
	for i, e := range entries {
		if e != nil && !slices.Contains(entries[:i], e) {
			s := &m.shards[shardOf(hashes[i])]
			s.expiresFrom = min(s.expiresFrom, e.expiry())
			// A key that just took a permit is in use until the call
			// ends, even if the call made it: it is marked as used, so
			// that the eviction hand passes it once before it may go.
			e.release(used[i] || all && !peek && keys[i].algo == algoConcurrency && vs[i].ok)
		}
	}
	ds := runtime.Decisions{Allowed: all, Each: make([]runtime.Decision, len(vs)), Cause: memoryFull(forgot)}
	for i, v := range vs {
		ds.Each[i] = v.decision()
	}
	return ds, nil
}

// Len reports how many keys the limiter currently holds, expired ones not
// yet evicted included. It is meant for tests and metrics.
func (m *Limiter) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += s.n
		s.mu.Unlock()
	}
	return n
}
