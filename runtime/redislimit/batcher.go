package redislimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// A batcher lets concurrent decisions share round trips. A decision that
// finds fewer than maxInFlight round trips under way goes at once, alone;
// one that finds them all busy joins a queue, and the next round trip to
// end takes the whole queue (up to maxBatch limits, and maxBatchLogUnits
// units of sliding logs after its first call) in one go. No timer
// holds a decision back, so a lone caller's latency is what it was, and the
// busier the limiter, the larger the batches.
//
// Round trips of batches run on goroutines of their own, bounded only by
// the client's timeouts, and each caller waits for its decision as its wait
// allows: a caller that gives up never takes a reply from the others, and
// a reply that arrives while the process is paused still decides. A lone
// decision on a single server is read on its caller's goroutine (see
// decide): a hand-off to another goroutine and back wakes an idle
// processor twice per decision.
//
// A batch is one script call that decides its calls one after another,
// each atomically (a call may also be a check, for Peek, or a settle, for
// Hold: see callOp), on a single server or a Sentinel-managed one. On a Redis
// Cluster or a Ring, each node has a batcher of its own (see nodes.go), and
// how it sends a batch is its kind's.
type batcher struct {
	lim  *Limiter
	kind laneKind
	// most is how many round trips may be under way at once.
	most int
	// calls holds calls for reuse.
	calls sync.Pool

	mu       sync.Mutex
	inFlight int
	queue    []*call
	// flying holds the batch of each round trip under way (guarded by
	// mu), for the watch; a run goroutine owns one entry of flying, and
	// the same entry of bufs.
	flying [maxInFlight][]*call
	bufs   [maxInFlight]buffers
	// watch wakes the calls in queue and flying whose waits are due (see
	// watch.go).
	watch watch
}

const (
	// maxInFlight round trips at once: enough to keep Redis busy while a
	// reply travels, few enough to leave the client's pool to others.
	maxInFlight = 2
	// nodeInFlight round trips at once to one node of a Cluster: its
	// nodes together keep several under way, and one per node makes each
	// node's batches larger (on 2 cores, 0.10 script calls per decision
	// at 64 callers against 0.17 with two, at no lower rate).
	nodeInFlight = 1
	// maxBatch limits are decided by one round trip at most, which bounds
	// how long one script call keeps Redis from other clients.
	maxBatch = 128
	// inlineLimits is how many limits a call holds without allocating.
	inlineLimits = 2
	// maxBatchLogUnits bounds the units of sliding-log limits a batch
	// carries beyond its first call: a sliding log writes 7 bytes per unit
	// admitted, so a batch of calls of the largest cost would write
	// maxBatch times as much as one; this bound keeps it within 460 KB.
	maxBatchLogUnits = 1 << 16
)

// logUnits returns the units c's sliding-log limits ask for.
func (c *call) logUnits() int64 {
	var n int64
	for _, i := range c.idx {
		if a := &c.d.asks[i]; a.code&^shadowFlag == codeSlidingLog {
			n += a.cost
		}
	}
	return n
}

// A call is one decision whose requests share a slot, from the caller that
// waits for it to the round trip that carries it. It holds its own copy
// of the requests, as the round trip may outlive a caller that stopped
// waiting. A call (with its channel) is reused once its caller has read a
// reply; one that its caller left, or that ended in an error, is left to
// the garbage collector, as something may still refer to it.
type call struct {
	d   resolvedCall
	w   wait
	idx []int
	// spans says the call's keys are of several slots of one Cluster
	// node: only a spread batch decides it (see Limiter.run).
	spans bool
	// connect bounds how long its round trip may take to get a
	// connection; see Limiter.connectBound.
	connect connectBound
	// marker is a settle's marker key (see callArgs), kept here rather
	// than in d so that the requests of a caller's d, which newCall only
	// reads, stay on the caller's stack.
	marker string
	asks   [inlineLimits]ask
	vs     [inlineLimits]verdict
	// receipts and used back d's of a call of few limits.
	receipts, used [inlineLimits]int64
	// finished is set once the round trip has filled committed and err
	// (and d's verdicts); wake then receives, as it does when the breaker
	// opens and when the watch finds the wait due at due (mono).
	finished  atomic.Bool
	wake      chan struct{}
	due       atomic.Int64
	committed bool
	err       error
	// abandoned (guarded by the batcher's mu) is set when the caller
	// stopped waiting before a batch took the decision, which then is not
	// sent; flight is the round trip that took it.
	abandoned bool
	flight    *flight
	// alone is the batch of a call sent alone.
	alone [1]*call
	// direct (guarded by the batcher's mu) says the caller reads the
	// round trip itself (see decide); the watch then records in late how
	// late (ns) its wakes were, and re-arms them every period (ns).
	direct bool
	late   atomic.Int64
	period int64
}

// buffers are what the round trips of one entry of flying reuse, one
// after another: the command's arguments, numbers and reply.
type buffers struct {
	args []any
	nums []byte
	res  []int64
}

func newBatcher(lim *Limiter, kind laneKind) *batcher {
	b := &batcher{lim: lim, kind: kind, most: maxInFlight}
	if kind == laneNode {
		b.most = nodeInFlight
	}
	b.calls.New = func() any { return &call{wake: make(chan struct{}, 1)} }
	b.watch.timer = time.AfterFunc(time.Hour, b.wakeDue)
	b.watch.timer.Stop()
	return b
}

// newCall returns a call of the requests of d at idx, which share a slot.
func (b *batcher) newCall(d *resolvedCall, idx []int) *call {
	c := b.calls.Get().(*call)
	n := len(idx)
	c.d = resolvedCall{now: d.now, asks: c.asks[:0], vs: c.vs[:0], op: d.op}
	c.marker = ""
	if n > inlineLimits {
		c.d.asks, c.d.vs = make([]ask, 0, n), make([]verdict, 0, n)
	}
	for _, i := range idx {
		c.d.asks = append(c.d.asks, d.asks[i])
	}
	c.d.vs = c.d.vs[:n]
	switch {
	case d.op == opSettle:
		// What it settles: its receipts and the units used.
		c.d.receipts, c.d.used = ints(&c.receipts, n), ints(&c.used, n)
		c.marker = b.lim.settleMarker(d.asks[idx[0]].key)
		for j, i := range idx {
			c.d.receipts[j] = d.receipts[i]
			if d.used != nil {
				c.d.used[j] = d.used[i]
			}
		}
	case d.op == opRenew, d.op == opRelease:
		// The permits it renews or releases.
		c.d.receipts = ints(&c.receipts, n)
		for j, i := range idx {
			c.d.receipts[j] = d.receipts[i]
		}
	case d.op == opWait:
		// Its places in line and how long to keep them; its receipts
		// come back.
		c.d.receipts, c.d.used = ints(&c.receipts, n), ints(&c.used, n)
		for j, i := range idx {
			c.d.receipts[j], c.d.used[j] = d.receipts[i], d.used[i]
		}
	case d.receipts != nil:
		// A held call: its receipts come back.
		c.d.receipts = ints(&c.receipts, n)
	}
	c.idx = firstN(n)
	c.spans = false
	if b.kind == laneNode {
		for _, a := range c.d.asks[1:] {
			if b.lim.slotOf(a.key) != b.lim.slotOf(c.d.asks[0].key) {
				c.spans = true
				break
			}
		}
	}
	c.finished.Store(false)
	select {
	case <-c.wake:
	default:
	}
	return c
}

// ints returns n zeros, in buf when they fit.
func ints(buf *[inlineLimits]int64, n int) []int64 {
	if n > inlineLimits {
		return make([]int64, n)
	}
	s := buf[:n]
	clear(s)
	return s
}

// free makes c, whose caller has read its reply, ready for reuse.
func (b *batcher) free(c *call) {
	clear(c.asks[:])
	c.d, c.flight, c.alone[0] = resolvedCall{}, nil, nil
	b.calls.Put(c)
}

// decide decides the requests of d at idx, which share a slot: alone and
// at once when a round trip is free, otherwise in the next batch, waiting
// as long as a wait from ctx, begun at start, allows. ctx's values go with
// a lone call.
//
// A lone call on a client that allows it (see Limiter.direct) is sent and
// read on its caller's goroutine, within the limiter's timeout: a period
// to get a connection, the rest to write and read. The watch meanwhile
// records how late its wakes are, as they would be for a waiting caller.
// When the read times out, a wake more than a little late says the process
// was paused or starved, and the reply may have arrived unread: the call
// is sent again, through a round trip of its own, and waited for as a
// batched call is, for what remains of its wait (the first may still
// count, which over-counts, never over-admits). So is a call that got no
// connection within the period, one whose connection broke (which go-redis
// would retry), and one whose read timed out before the budget ended.
// Otherwise Redis was silent for the timeout while the process ran.
func (b *batcher) decide(ctx context.Context, start time.Time, d *resolvedCall, idx []int) (bool, error) {
	c := b.newCall(d, idx)
	b.lim.startWaitAt(ctx, &c.w, start)
	// Not while a check of Redis runs: a caller in a read of its own waits
	// out its timeout, where the breaker releases the others at once.
	direct := b.lim.direct != nil && c.w.budget == b.lim.cfg.timeout && !b.lim.checking.Load()
	for {
		b.send(ctx, c, direct)
		if err := c.w.untilWoken(ctx, b, c); err != nil {
			b.abandon(c)
			return false, err
		}
		c.flight.leave()
		// Only a first attempt is read by the caller: a resent call's
		// wait may have less than a direct read's timeout left.
		read := c.direct
		c.direct, direct = false, false
		if (read && b.resendAlone(c)) || c.w.resend(c.err) {
			c.finished.Store(false)
			continue
		}
		if c.err != nil {
			// The error may refer to c's wait.
			return false, c.w.outcome(c.err)
		}
		// A settle's or a renewal's verdicts say which permits were
		// lost: its caller gives vs of their own.
		for j, i := range idx {
			d.vs[i] = c.d.vs[j]
		}
		if d.receipts != nil && d.op.decides() {
			for j, i := range idx {
				d.receipts[i] = c.d.receipts[j]
			}
		}
		committed := c.committed
		b.free(c)
		return committed, nil
	}
}

// send makes an attempt at c: alone and at once when a round trip is free
// (on this goroutine, through Limiter.direct, when direct), otherwise in
// the next batch. The watch wakes c's caller when its wait is due.
func (b *batcher) send(ctx context.Context, c *call, direct bool) {
	due := c.w.due()
	c.due.Store(due)
	c.late.Store(0)
	c.period = int64(c.w.period())
	c.connect = b.lim.connectBound(&c.w)
	alone := c.connect
	if direct {
		alone = directBound(&c.w)
	}
	b.mu.Lock()
	b.watchFrom(due)
	if b.inFlight >= b.most {
		b.queue = append(b.queue, c)
		b.mu.Unlock()
		return
	}
	b.inFlight++
	c.connect = alone
	c.flight = newFlight(ctx, 1, c.connect)
	c.alone[0] = c
	slot := b.freeSlot()
	b.flying[slot] = c.alone[:]
	c.direct = direct
	b.mu.Unlock()
	if direct {
		b.runAlone(slot, c)
	} else {
		go b.run(slot, c.alone[:])
	}
}

// abandon ends the wait of c's caller, who stopped waiting: a batch that
// has not taken c leaves it out, and one that has goes on without it.
func (b *batcher) abandon(c *call) {
	b.mu.Lock()
	c.abandoned = true
	f := c.flight
	b.mu.Unlock()
	if f != nil {
		f.leave()
	}
}

// land wakes the callers of batch, the round trip in slot, which has
// filled their calls. Once out of flying, a call may be reused at once;
// the slot stays its run goroutine's (empty, not nil) until take frees it.
func (b *batcher) land(slot int, batch []*call) {
	b.mu.Lock()
	b.flying[slot] = batch[:0]
	b.mu.Unlock()
	for _, c := range batch {
		c.finished.Store(true)
		poke(c)
	}
}

// freeSlot returns a slot of flying that no run goroutine holds; b.mu is
// held.
func (b *batcher) freeSlot() int {
	for i, f := range b.flying {
		if f == nil {
			return i
		}
	}
	panic("ratelimit: more round trips than maxInFlight") // a defect of the batcher
}

// take returns the next batch for the round trip in slot, or nil after
// freeing the round trip's place when nothing is queued.
func (b *batcher) take(slot int) []*call {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queue) > 0 {
		n, limits, units := 0, 0, int64(0)
		for n < len(b.queue) {
			c := b.queue[n]
			u := c.logUnits()
			if n > 0 && (limits+len(c.idx) > maxBatch || units+u > maxBatchLogUnits) {
				break
			}
			limits += len(c.idx)
			units += u
			n++
		}
		batch := make([]*call, 0, n)
		for _, c := range b.queue[:n] {
			if !c.abandoned {
				batch = append(batch, c)
			}
		}
		clear(b.queue[:n])
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil
		}
		if len(batch) > 0 {
			connect := batch[0].connect
			for _, c := range batch[1:] {
				connect = connect.and(c.connect)
			}
			f := newFlight(context.Background(), len(batch), connect)
			for _, c := range batch {
				c.flight = f
			}
			b.flying[slot] = batch
			return batch
		}
	}
	b.inFlight--
	b.flying[slot] = nil
	return nil
}

// run sends batches, starting with batch, until the queue is empty; then
// it frees its round trip's place and its slot of flying.
func (b *batcher) run(slot int, batch []*call) {
	for batch != nil {
		b.fly(slot, batch, b.lim.client)
		batch = b.take(slot)
	}
}

// runAlone sends c, a lone call, through Limiter.direct on its caller's
// goroutine, and leaves the batches queued meanwhile to a run goroutine.
func (b *batcher) runAlone(slot int, c *call) {
	b.fly(slot, c.alone[:], b.lim.direct)
	if next := b.take(slot); next != nil {
		go b.run(slot, next)
	}
}

// fly makes batch's round trip, in slot, through client, and lands it.
func (b *batcher) fly(slot int, batch []*call, client doer) {
	f := batch[0].flight
	if at, ok := f.begin(); ok {
		// The watch ends the round trip at its connect bound: a timer of
		// its own, set and stopped per round trip, would cost a lone
		// call as much as the rest of its client side.
		b.mu.Lock()
		b.watchFrom(at)
		b.mu.Unlock()
	}
	sent := time.Now()
	switch b.sends(batch) {
	case laneServer:
		b.lim.evalBatch(f, client, &b.bufs[slot], batch)
	case laneNode:
		b.lim.evalSpread(f, &b.bufs[slot], batch)
	default:
		b.lim.evalPipelined(f, batch)
	}
	b.lim.noteAnswer(sent, batch[0].err)
	b.land(slot, batch)
}

// sends returns how b sends batch: a node's batch of one slot declares
// its keys as a single server's does, and once a node refused spread
// batches, its calls go one by one.
func (b *batcher) sends(batch []*call) laneKind {
	if b.kind != laneNode {
		return b.kind
	}
	slot := b.lim.slotOf(batch[0].d.asks[0].key)
	for _, c := range batch {
		if c.spans || b.lim.slotOf(c.d.asks[0].key) != slot {
			if b.lim.lanes.refused.Load() {
				return lanePipeline
			}
			return laneNode
		}
	}
	return laneServer
}

// resendAlone judges the round trip that c's caller read itself (see
// decide), and reports whether c must be sent again; otherwise c.err is
// what the wait found.
func (b *batcher) resendAlone(c *call) bool {
	if err := c.err; err == nil || isRedisError(err) || isRefused(err) || errors.Is(err, ErrNotReplicated) {
		// A reply, a refused connection (the pool has retried the dial),
		// or a script that ran but whose writes the replicas did not all
		// acknowledge, which a resend would count twice: as any round
		// trip's.
		return false
	}
	now := mono()
	// due before late: the watch stores a late wake's lateness before the
	// next due, so a due that has moved on comes with its lateness.
	due := c.due.Load()
	resend, err := c.w.judgeRead(c.err, now, due, c.late.Load())
	c.err = err
	return resend
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

// A batched call's caller waits on its call's wake channel alone, not on a
// timer of its own and the breaker's channel, which every waiting caller
// would lock twice per decision. Instead the batcher wakes it: when its
// round trip ends, when the breaker opens (trip), and when its wait is due
// (the watch: one timer for every waiting call of the limiter, set for the
// earliest wait due). A woken caller judges its wait exactly as a timer
// would have it do, lateness included, since the watch's timer is as late
// as the process is paused. The watch also ends each round trip whose
// connect bound (see Limiter.connectBound) has passed.
type watch struct {
	// timer runs wakeDue; at (guarded by the batcher's mu) is when (mono)
	// it is set for, 0 when it is not.
	timer *time.Timer
	at    int64
}

// poke wakes c's caller, unless a wake is pending.
func poke(c *call) {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// watchFrom makes the watch wake the calls due at t, if it would not
// already run by then; b.mu is held.
func (b *batcher) watchFrom(t int64) {
	if b.watch.at != 0 && t >= b.watch.at {
		return
	}
	b.watch.at = t
	b.watch.timer.Reset(time.Duration(t - mono()))
}

// expect makes the watch wake c at t, the due time of its next wake.
func (b *batcher) expect(c *call, t int64) {
	c.due.Store(t)
	b.mu.Lock()
	b.watchFrom(t)
	b.mu.Unlock()
}

// wakeDue wakes every waiting call whose wait is due, ends the round trips
// whose connect bound passed, and sets the watch for the next of either.
func (b *batcher) wakeDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now, next := mono(), int64(0)
	b.each(func(c *call) {
		due := c.due.Load()
		if c.direct && due <= now {
			// Nobody waits on c's wake: the watch keeps its wait's
			// account instead (see batcher.decide).
			c.late.Store(max(c.late.Load(), now-due))
			due = now + c.period
			c.due.Store(due)
		}
		switch {
		case due <= now:
			poke(c)
		case next == 0 || due < next:
			next = due
		}
	})
	for _, batch := range b.flying {
		if len(batch) == 0 {
			continue
		}
		if at := batch[0].flight.expireBy(now); at != 0 && (next == 0 || at < next) {
			next = at
		}
	}
	b.watch.at = 0
	if next != 0 {
		b.watchFrom(next)
	}
}

// trip wakes every waiting call: the breaker opened.
func (b *batcher) trip() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.each(poke)
}

// each calls f for every call queued or under way whose caller waits;
// b.mu is held.
func (b *batcher) each(f func(*call)) {
	for _, c := range b.queue {
		if !c.abandoned {
			f(c)
		}
	}
	for _, batch := range b.flying {
		for _, c := range batch {
			if !c.abandoned && !c.finished.Load() {
				f(c)
			}
		}
	}
}
