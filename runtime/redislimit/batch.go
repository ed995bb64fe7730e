package redislimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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
// On a single server or a Sentinel-managed one, a batch is one script call
// that decides its calls one after another, each atomically. On a Redis
// Cluster or a Ring, whose scripts may touch one slot only, a batch is a
// pipeline of one script call per decision, which go-redis splits by node.
type batcher struct {
	lim *Limiter
	// pipelined is true when a batch is a pipeline rather than one call.
	pipelined bool
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
	d   decision
	w   wait
	idx []int
	// connect bounds how long its round trip may take to get a
	// connection; see Limiter.connectBound.
	connect connectBound
	asks    [inlineLimits]ask
	vs      [inlineLimits]verdict
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

// A flight is one round trip, and the context it runs on: it carries the
// values of the context of the call that started it (none for a batch) but
// none of its cancellation, and ends once every caller it carries has
// stopped waiting (a decision nobody waits for is not worth a retry or a
// reconnection, and one sent after its caller was answered by the policy
// would count twice) or once its connect bound passes. Being its own
// context, it costs a round trip one allocation and one timer.
type flight struct {
	values  context.Context
	waiting atomic.Int32
	connect connectBound
	timer   *time.Timer

	mu sync.Mutex
	// deadline is the connect bound (mono), fixed by begin; 0 for none.
	deadline int64
	done     chan struct{}
	err      error
}

// newFlight returns a flight for waiting callers, with values' values.
func newFlight(values context.Context, waiting int, connect connectBound) *flight {
	f := &flight{values: values, connect: connect}
	f.waiting.Store(int32(waiting))
	return f
}

// start starts the round trip on a timer of its own for the connect
// bound; landed stops it.
func (f *flight) start() {
	if at, ok := f.begin(); ok {
		f.timer = time.AfterFunc(time.Duration(at-mono()), f.expire)
	}
}

// landed ends the round trip that start started: its reply is in.
func (f *flight) landed() {
	if f.timer != nil {
		f.timer.Stop()
	}
}

// begin starts the round trip: its connect bound runs from now. It returns
// when (mono) the bound passes, and false when there is none.
func (f *flight) begin() (int64, bool) {
	if f.connect.by == 0 {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// A goroutine that starts late still has a little time to connect.
	f.deadline = max(f.connect.by, mono()+int64(f.connect.least))
	return f.deadline, true
}

// expireBy ends f if its connect bound passed by now (mono), and
// otherwise returns the bound: 0 when there is none, or f has ended.
func (f *flight) expireBy(now int64) int64 {
	f.mu.Lock()
	deadline, ended := f.deadline, f.err != nil
	f.mu.Unlock()
	switch {
	case ended || deadline == 0:
		return 0
	case now >= deadline:
		f.expire()
		return 0
	}
	return deadline
}

// leave ends one caller's wait for f.
func (f *flight) leave() {
	if f.waiting.Add(-1) == 0 {
		f.end(context.Canceled)
	}
}

func (f *flight) expire() { f.end(context.DeadlineExceeded) }

// end ends f with err, unless it has ended.
func (f *flight) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return
	}
	f.err = err
	if f.done != nil {
		close(f.done)
	}
}

// Deadline is the connect bound, if any.
func (f *flight) Deadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deadline == 0 {
		return time.Time{}, false
	}
	return timeOf(f.deadline), true
}

// Done is closed once f ends.
func (f *flight) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done == nil {
		f.done = make(chan struct{})
		if f.err != nil {
			close(f.done)
		}
	}
	return f.done
}

// Err is why f ended: context.Canceled when its callers left, or
// context.DeadlineExceeded when its connect bound passed.
func (f *flight) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Value is the value for key of the context that started f.
func (f *flight) Value(key any) any { return f.values.Value(key) }

func newBatcher(lim *Limiter) *batcher {
	b := &batcher{lim: lim}
	b.calls.New = func() any { return &call{wake: make(chan struct{}, 1)} }
	b.watch.timer = time.AfterFunc(time.Hour, b.wakeDue)
	b.watch.timer.Stop()
	switch lim.client.(type) {
	case *redis.ClusterClient, *redis.Ring:
		b.pipelined = true
	}
	return b
}

// newCall returns a call of the requests of d at idx, which share a slot.
func (b *batcher) newCall(d *decision, idx []int) *call {
	c := b.calls.Get().(*call)
	n := len(idx)
	c.d = decision{now: d.now, asks: c.asks[:0], vs: c.vs[:0]}
	if n > inlineLimits {
		c.d.asks, c.d.vs = make([]ask, 0, n), make([]verdict, 0, n)
	}
	for _, i := range idx {
		c.d.asks = append(c.d.asks, d.asks[i])
	}
	c.d.vs = c.d.vs[:n]
	c.idx = firstN(n)
	c.finished.Store(false)
	select {
	case <-c.wake:
	default:
	}
	return c
}

// free makes c, whose caller has read its reply, ready for reuse.
func (b *batcher) free(c *call) {
	clear(c.asks[:])
	c.d, c.flight, c.alone[0] = decision{}, nil, nil
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
func (b *batcher) decide(ctx context.Context, start time.Time, d *decision, idx []int) (bool, error) {
	c := b.newCall(d, idx)
	b.lim.startWaitAt(ctx, &c.w, start)
	// Not while a check of Redis runs: a caller in a read of its own waits
	// out its timeout, where the breaker releases the others at once.
	direct := b.lim.direct != nil && c.w.budget == b.lim.cfg.timeout && !b.lim.checking.Load()
	for {
		c.connect = b.lim.connectBound(&c.w)
		due := c.w.due()
		c.due.Store(due)
		c.late.Store(0)
		c.period = int64(c.w.period())
		b.mu.Lock()
		b.watchFrom(due)
		if b.inFlight < maxInFlight {
			b.inFlight++
			if direct {
				c.connect = directBound(&c.w)
			}
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
		} else {
			b.queue = append(b.queue, c)
			b.mu.Unlock()
		}
		if err := c.w.untilWoken(ctx, b, c); err != nil {
			b.mu.Lock()
			c.abandoned = true
			f := c.flight
			b.mu.Unlock()
			if f != nil {
				f.leave()
			}
			return false, err
		}
		c.flight.leave()
		// Only a first attempt is read by the caller: a resent call's
		// wait may have less than a direct read's timeout left.
		read := c.direct
		c.direct, direct = false, false
		if read && b.resendAlone(c) {
			c.finished.Store(false)
			continue
		}
		if c.w.resend(c.err) {
			c.finished.Store(false)
			continue
		}
		if c.err != nil {
			// The error may refer to c's wait.
			return false, c.w.outcome(c.err)
		}
		for j, i := range idx {
			d.vs[i] = c.d.vs[j]
		}
		committed := c.committed
		b.free(c)
		return committed, nil
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
	if b.pipelined {
		b.lim.evalPipelined(f, batch)
	} else {
		b.lim.evalBatch(f, client, &b.bufs[slot], batch)
	}
	b.lim.noteAnswer(sent, batch[0].err)
	b.land(slot, batch)
}

// resendAlone judges the round trip that c's caller read itself (see
// decide), and reports whether c must be sent again; otherwise c.err is
// what the wait found. The time the read took counts towards c's wait as a
// caller's sleep would, lateness (the watch's late wakes, and the wake it
// has not made yet) excepted.
func (b *batcher) resendAlone(c *call) bool {
	err := c.err
	if err == nil || isRedisError(err) || isRefused(err) {
		// A reply, or a refused connection (the pool has retried the
		// dial): as any round trip's.
		return false
	}
	now := mono()
	// due before late: the watch stores a late wake's lateness before the
	// next due, so a due that has moved on comes with its lateness.
	due := c.due.Load()
	late := time.Duration(max(c.late.Load(), now-due))
	expected := time.Duration(now-c.w.last) - late
	if errors.Is(err, context.DeadlineExceeded) || !isTimeout(err) {
		// No connection within directBound, or one that broke, which the
		// limiter's own client retries.
		c.w.account(now, expected)
		return true
	}
	c.err = c.w.judge(now, expected)
	return c.err == nil
}

// evalBatch decides a batch in one script call, its command, numbers and
// reply built in sl's buffers.
func (r *Limiter) evalBatch(ctx context.Context, client doer, sl *buffers, batch []*call) {
	s := batchScript(batch)
	args := s.appendArgs(sl.args[:0])
	for _, c := range batch {
		for j := range c.d.asks {
			// A pointer, which go-redis accepts, is not boxed anew.
			args = append(args, &c.d.asks[j].key)
		}
	}
	nums, mode := sl.nums[:0], modeDecide
	a := uniformAsk(batch)
	if a != nil {
		nums, mode = appendUniform(nums, a, func(i int) int64 { return batch[i].d.now }, len(batch)), modeUniform
	} else {
		for _, c := range batch {
			nums = appendNums(nums, &c.d, c.idx, false)
		}
	}
	args = finishArgs(args, mode, nums)
	res, err := s.run(ctx, client, args, sl.res[:0])
	// The keys belong to calls, which are reused.
	clear(args)
	sl.args, sl.nums, sl.res = args[:0], nums[:0], res[:0]
	if a != nil {
		if err == nil && len(res) != uniformFields*len(batch) {
			err = errReply(len(res))
		}
		for i, c := range batch {
			c.err = err
			if err == nil {
				c.committed, c.err = readGroup(res[uniformFields*i:uniformFields*(i+1)], &c.d, c.idx, true)
			}
		}
		return
	}
	for _, c := range batch {
		if err != nil {
			c.err = err
			continue
		}
		c.committed, res, c.err = readCall(res, &c.d, c.idx)
		if c.err != nil {
			err = c.err
		}
	}
}

// evalPipelined decides a batch as a pipeline of one script call per
// decision. A call answered NOSCRIPT (a node that restarted or joined) is
// sent again on its own, which loads the script.
func (r *Limiter) evalPipelined(ctx context.Context, batch []*call) {
	pipe := r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	args := make([][]any, len(batch))
	for i, c := range batch {
		if s := scriptOf(&c.d, c.idx); c.d.uniform(c.idx) {
			args[i] = uniformArgs(s, &c.d, 0)
		} else {
			args[i] = r.callArgs(s, modeDecide, &c.d, c.idx, false)
		}
		cmds[i] = pipe.Do(ctx, args[i]...)
	}
	_, _ = pipe.Exec(ctx)
	for i, c := range batch {
		var res []int64
		reply, err := cmds[i].Text()
		if err == nil {
			res, err = appendReply(nil, reply)
		} else if isNoScript(err) {
			res, err = scriptOf(&c.d, c.idx).run(ctx, r.client, args[i], nil)
		}
		if err == nil {
			c.committed, err = readGroup(res, &c.d, c.idx, c.d.uniform(c.idx))
		}
		c.err = err
	}
}

// batchScript returns the script that can decide every call of batch.
func batchScript(batch []*call) *script {
	s := scriptOf(&batch[0].d, batch[0].idx)
	for _, c := range batch[1:] {
		if scriptOf(&c.d, c.idx) != s {
			return mixedScript
		}
	}
	return s
}
