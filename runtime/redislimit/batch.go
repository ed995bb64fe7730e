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
	now      int64
	deadline time.Time
	reqs     []runtime.Request
	idx      []int
	vs       []verdict
	// abandoned is set when the caller stopped waiting before the batch
	// took the decision, which then is not sent.
	abandoned atomic.Bool
	committed bool
	err       error
	done      chan struct{}
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
// at once when a round trip is free, otherwise in the next batch, by
// deadline (the limiter's timeout) or ctx's own, whichever comes first.
func (b *batcher) decide(ctx context.Context, deadline time.Time, callerFirst bool, now int64, reqs []runtime.Request, idx []int, vs []verdict) (bool, error) {
	b.mu.Lock()
	if b.inFlight < maxInFlight {
		b.inFlight++
		b.mu.Unlock()
		ctx, cancel := context.WithDeadline(ctx, deadline)
		committed, err := b.lim.evalGroup(ctx, callerFirst, modeDecide, now, reqs, idx, vs, nil)
		cancel()
		b.release()
		return committed, err
	}
	// The pending call gets copies: the caller's requests and verdicts
	// then stay on its stack when it goes alone. Its batch gives up by the
	// earliest deadline of its calls, so that no caller waits past its
	// own: the round trips ahead of it end by theirs, which are earlier.
	p := &pending{now: now, deadline: deadline, reqs: slices.Clone(reqs), idx: idx, vs: make([]verdict, len(vs)), done: make(chan struct{})}
	b.queue = append(b.queue, p)
	b.limits += len(idx)
	b.mu.Unlock()
	select {
	case <-p.done:
		copy(vs, p.vs)
		return p.committed, p.err
	case <-ctx.Done():
		p.abandoned.Store(true)
		return false, ctx.Err()
	}
}

// release ends a round trip: it hands the queue to a new batch on its own
// goroutine, keeping the round trip's place, or frees the place.
func (b *batcher) release() {
	batch := b.take()
	if batch == nil {
		return
	}
	go b.run(batch)
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
			if !p.abandoned.Load() {
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
			return batch
		}
	}
	b.inFlight--
	return nil
}

// run sends batches until the queue is empty.
func (b *batcher) run(batch []*pending) {
	for batch != nil {
		deadline := batch[0].deadline
		for _, p := range batch[1:] {
			if p.deadline.Before(deadline) {
				deadline = p.deadline
			}
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		if b.pipelined {
			b.lim.evalPipelined(ctx, batch)
		} else {
			b.lim.evalBatch(ctx, batch)
		}
		cancel()
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
	res, err := r.eval(ctx, false, s, finishArgs(args, modeDecide, nums))
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
			p.committed, p.err = r.evalGroup(ctx, false, modeDecide, p.now, p.reqs, p.idx, p.vs, nil)
			continue
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
