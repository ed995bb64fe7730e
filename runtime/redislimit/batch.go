package redislimit

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A batcher lets concurrent decisions share round trips. A decision that
// finds fewer than maxInFlight round trips under way goes at once, alone;
// one that finds them all busy joins a queue, and the next round trip to
// end takes the whole queue (up to maxBatch limits) in one go. No timer
// holds a decision back, so a lone caller's latency is what it was, and the
// busier the limiter, the larger the batches.
//
// Round trips run on goroutines of their own, bounded only by the client's
// timeouts, and each caller waits for its decision as its wait allows: a
// caller that gives up never takes a reply from the others, and a reply
// that arrives while the process is paused still decides.
//
// On a single server or a Sentinel-managed one, a batch is one script call
// that decides its calls one after another, each atomically. On a Redis
// Cluster or a Ring, whose scripts may touch one slot only, a batch is a
// pipeline of one script call per decision, which go-redis splits by node.
type batcher struct {
	lim *Limiter
	// pipelined is true when a batch is a pipeline rather than one call.
	pipelined bool

	mu       sync.Mutex
	inFlight int
	queue    []*pending
	limits   int // in queue
}

const (
	// maxInFlight round trips at once: enough to keep Redis busy while a
	// reply travels, few enough to leave the client's pool to others.
	maxInFlight = 2
	// maxBatch limits are decided by one round trip at most, which bounds
	// how long one script call keeps Redis from other clients.
	maxBatch = 128
)

// pending is one decision waiting for a batch.
type pending struct {
	now int64
	// connect bounds how long its round trip may take to get a
	// connection; see Limiter.connectBound.
	connect connectBound
	reqs    []runtime.Request
	idx     []int
	vs      []verdict
	// abandoned (guarded by the batcher's mu) is set when the caller
	// stopped waiting before a batch took the decision, which then is not
	// sent; flight is the round trip that took it.
	abandoned bool
	flight    *flight
	committed bool
	err       error
	done      chan struct{}
}

// A flight is one round trip's context, cancelled once every caller it
// carries has stopped waiting: a decision nobody waits for is not worth a
// retry or a reconnection, and one sent after its caller was answered by
// the policy would count twice.
type flight struct {
	ctx     context.Context
	cancel  context.CancelFunc
	waiting atomic.Int32
	connect connectBound
}

// newFlight returns a flight for waiting callers, with parent's values.
func newFlight(parent context.Context, waiting int, connect connectBound) *flight {
	f := &flight{connect: connect}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(parent))
	f.waiting.Store(int32(waiting))
	return f
}

// start returns the context of the round trip, which starts now.
func (f *flight) start() (context.Context, context.CancelFunc) {
	if f.connect.by.IsZero() {
		return f.ctx, func() {}
	}
	// A goroutine that starts late still has a little time to connect.
	return context.WithDeadline(f.ctx, later(f.connect.by, time.Now().Add(f.connect.least)))
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// leave ends one caller's wait for f.
func (f *flight) leave() {
	if f.waiting.Add(-1) == 0 {
		f.cancel()
	}
}

func newBatcher(lim *Limiter) *batcher {
	b := &batcher{lim: lim}
	switch lim.client.(type) {
	case *redis.ClusterClient, *redis.Ring:
		b.pipelined = true
	}
	return b
}

// decide decides one call whose requests (at idx) share a slot: alone and
// at once when a round trip is free, otherwise in the next batch, waiting
// as long as w allows.
func (b *batcher) decide(ctx context.Context, w *wait, now int64, reqs []runtime.Request, idx []int, vs []verdict) (bool, error) {
	// The pending call gets copies: the round trip may outlive a caller
	// that stopped waiting.
	own := slices.Clone(reqs)
	for {
		p := &pending{now: now, connect: b.lim.connectBound(w), reqs: own, idx: idx, vs: make([]verdict, len(vs)), done: make(chan struct{})}
		b.mu.Lock()
		if b.inFlight < maxInFlight {
			b.inFlight++
			p.flight = newFlight(ctx, 1, p.connect)
			b.mu.Unlock()
			go b.run([]*pending{p})
		} else {
			b.queue = append(b.queue, p)
			b.limits += len(idx)
			b.mu.Unlock()
		}
		if err := w.until(ctx, p.done); err != nil {
			b.mu.Lock()
			p.abandoned = true
			f := p.flight
			b.mu.Unlock()
			if f != nil {
				f.leave()
			}
			return false, err
		}
		p.flight.leave()
		if w.resend(p.err) {
			continue
		}
		for _, i := range idx {
			vs[i] = p.vs[i]
		}
		return p.committed, w.outcome(p.err)
	}
}

// take returns the next batch, or nil after freeing the round trip's place
// when nothing is queued.
func (b *batcher) take() []*pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queue) > 0 {
		n, limits := 0, 0
		for n < len(b.queue) && (n == 0 || limits+len(b.queue[n].idx) <= maxBatch) {
			limits += len(b.queue[n].idx)
			n++
		}
		batch := make([]*pending, 0, n)
		for _, p := range b.queue[:n] {
			if !p.abandoned {
				batch = append(batch, p)
			}
		}
		clear(b.queue[:n])
		b.queue = b.queue[n:]
		b.limits -= limits
		if len(b.queue) == 0 {
			b.queue = nil
		}
		if len(batch) > 0 {
			connect := batch[0].connect
			for _, p := range batch[1:] {
				connect = connect.and(p.connect)
			}
			f := newFlight(context.Background(), len(batch), connect)
			for _, p := range batch {
				p.flight = f
			}
			return batch
		}
	}
	b.inFlight--
	return nil
}

// run sends batches, starting with batch, until the queue is empty; then
// it frees its round trip's place.
func (b *batcher) run(batch []*pending) {
	for batch != nil {
		ctx, cancel := batch[0].flight.start()
		sent := time.Now()
		if b.pipelined {
			b.lim.evalPipelined(ctx, batch)
		} else {
			b.lim.evalBatch(ctx, batch)
		}
		cancel()
		b.lim.noteAnswer(sent, batch[0].err)
		for _, p := range batch {
			close(p.done)
		}
		batch = b.take()
	}
}

// evalBatch decides a batch in one script call.
func (r *Limiter) evalBatch(ctx context.Context, batch []*pending) {
	s := batchScript(batch)
	keys := 0
	for _, p := range batch {
		keys += len(p.idx)
	}
	args, nums := s.scriptArgs(keys), make([]byte, 0, 16*len(batch)+40*keys)
	for _, p := range batch {
		args, nums = appendCall(args, nums, r, p.now, p.reqs, p.idx, nil)
	}
	res, err := s.run(ctx, r.client, finishArgs(args, modeDecide, nums))
	for _, p := range batch {
		if err != nil {
			p.err = err
			continue
		}
		p.committed, res, p.err = readCall(res, p.reqs, p.idx, p.vs, nil)
		if p.err != nil {
			err = p.err
		}
	}
}

// evalPipelined decides a batch as a pipeline of one script call per
// decision. A call answered NOSCRIPT (a node that restarted or joined) is
// sent again on its own, which loads the script.
func (r *Limiter) evalPipelined(ctx context.Context, batch []*pending) {
	pipe := r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, p := range batch {
		s := scriptFor(p.reqs, p.idx)
		args, nums := appendCall(s.scriptArgs(len(p.idx)), nil, r, p.now, p.reqs, p.idx, nil)
		cmds[i] = pipe.Do(ctx, finishArgs(args, modeDecide, nums)...)
	}
	_, _ = pipe.Exec(ctx)
	for i, p := range batch {
		res, err := cmds[i].Int64Slice()
		if err != nil && isNoScript(err) {
			s := scriptFor(p.reqs, p.idx)
			args, nums := appendCall(s.scriptArgs(len(p.idx)), nil, r, p.now, p.reqs, p.idx, nil)
			res, err = s.run(ctx, r.client, finishArgs(args, modeDecide, nums))
		}
		if err != nil {
			p.err = err
			continue
		}
		p.committed, _, p.err = readCall(res, p.reqs, p.idx, p.vs, nil)
	}
}

// batchScript returns the script that can decide every call of batch.
func batchScript(batch []*pending) *script {
	s := scriptFor(batch[0].reqs, batch[0].idx)
	for _, p := range batch[1:] {
		if scriptFor(p.reqs, p.idx) != s {
			return mixedScript
		}
	}
	return s
}

// isNoScript reports whether err is Redis not knowing the script.
func isNoScript(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && len(rerr.Error()) >= 8 && rerr.Error()[:8] == "NOSCRIPT"
}
