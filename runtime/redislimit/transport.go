package redislimit

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// How a call reaches Redis and its reply comes back.
//
// A call of one slot, with batching on, goes through the batcher
// (batcher.go) in one of three ways: read on its caller's goroutine
// through Limiter.direct when it finds no other on its way on a single
// server; alone, on a round trip's goroutine; or with the calls queued
// meanwhile, as one script call (evalBatch) or, on a Cluster or a Ring,
// one pipeline (evalPipelined). Its caller waits as wait.untilWoken, woken
// by the batcher (watch.go).
//
// Every other round trip (batching off, each slot of a call across Cluster
// slots, a refund, the liveness check) is one command on a goroutine of its
// own (exchange), which its caller waits for as wait.until, on a timer of
// its own.
//
// Either way, a round trip runs on a flight: a context that ends once no
// caller waits for it, or once its connect bound passes (see
// connectBound), and bounds nothing once the command is written.

// evalGroup runs the script in mode (modeDecide or modeCheck) for the
// requests of d at idx, waiting for the reply as long as w allows, and
// fills their verdicts and receipts. It reports whether the group's
// admissions were recorded.
func (r *Limiter) evalGroup(ctx context.Context, w *wait, mode scriptMode, d *resolvedCall, idx []int) (bool, error) {
	s := scriptOf(d, idx)
	var args []any
	uniform := mode == modeDecide && d.uniform(idx)
	if uniform {
		args = uniformArgs(s, d, idx[0])
	} else {
		marker := ""
		if mode == modeSettle {
			marker = r.settleMarker(d.asks[idx[0]].key)
		}
		args = r.callArgs(s, mode, d, idx, marker)
	}
	res, err := r.eval(ctx, w, s, args, mode != modeCheck)
	if err != nil {
		return false, err
	}
	// A settle's or a renewal's verdicts say which permits were lost.
	return readGroup(res, d, idx, uniform)
}

// eval runs the script command args on a goroutine of its own and waits
// for its reply as long as w allows; writes says whether the command
// records anything (see Limiter.exec). The command itself is bounded only
// by the client's own read and write timeouts: a reply that arrives while
// this process is paused is still read when it resumes, and decides. An
// abandoned call may still be recorded when Redis answers late; that
// over-counts, never over-admits.
func (r *Limiter) eval(ctx context.Context, w *wait, s *script, args []any, writes bool) ([]int64, error) {
	return r.exchange(ctx, w, func(ctx context.Context) ([]int64, error) {
		return r.runScript(ctx, r.client, s, args, nil, writes)
	})
}

// exchange runs do as a round trip on a goroutine of its own and waits for it
// as long as w allows. A round trip that got no connection while this
// process was paused is made again.
func (r *Limiter) exchange(ctx context.Context, w *wait, do func(context.Context) ([]int64, error)) ([]int64, error) {
	for {
		rt := &roundTrip{done: make(chan struct{})}
		f := newFlight(ctx, 1, r.connectBound(w))
		go func() {
			f.start()
			defer f.landed()
			sent := time.Now()
			rt.res, rt.err = do(f)
			r.noteAnswer(sent, rt.err)
			close(rt.done)
		}()
		err := w.until(ctx, rt.done)
		f.leave()
		if err != nil {
			return nil, err
		}
		if !w.resend(rt.err) {
			return rt.res, w.outcome(rt.err)
		}
	}
}

// roundTrip is one command's reply, complete once done is closed.
type roundTrip struct {
	res  []int64
	err  error
	done chan struct{}
}

// evalBatch decides a batch in one script call, its command, numbers and
// reply built in bufs.
func (r *Limiter) evalBatch(ctx context.Context, client doer, bufs *buffers, batch []*call) {
	s, args, uniform := encodeBatch(bufs, batch)
	reply, err := r.exec(ctx, client, s, args, writes(batch))
	// The keys belong to calls, which are reused.
	clear(args)
	bufs.args = args[:0]
	bufs.res = readBatch(bufs.res[:0], reply, err, batch, uniform)[:0]
}

// evalSpread decides a batch of calls on several slots of one Cluster
// node in one script call, routed by its first key. The calls the script
// left undecided (a slot moved, or the node refused) go as evalPipelined
// sends them, each routed by its own keys, once the client has been told
// to reload its map of slots; and a node that refuses scripts touching
// keys they do not declare turns spread batches off for good.
func (r *Limiter) evalSpread(ctx context.Context, bufs *buffers, batch []*call) {
	s, args, uniform := encodeSpread(bufs, batch)
	reply, err := r.exec(ctx, r.client, s, args, writes(batch))
	clear(args)
	bufs.args = args[:0]
	res, left, stop := readSpread(bufs.res[:0], reply, err, batch, uniform)
	bufs.res = res[:0]
	if len(left) == 0 {
		return
	}
	if refusesSpread(stop) {
		r.lanes.refused.Store(true)
	}
	if c, ok := r.client.(*redis.ClusterClient); ok {
		c.ReloadState(ctx)
	}
	r.evalPipelined(ctx, left)
}

// evalPipelined decides a batch as a pipeline of one script call per
// decision. A call answered NOSCRIPT (a node that restarted or joined) is
// sent again on its own, which loads the script. A call over several
// slots, which no script call may declare, ends in errSpans.
func (r *Limiter) evalPipelined(ctx context.Context, batch []*call) {
	calls := make([]scriptCall, len(batch))
	for i, c := range batch {
		if c.spans {
			continue
		}
		s := scriptOf(&c.d, c.idx)
		calls[i].s = s
		if c.d.uniform(c.idx) {
			calls[i].args = uniformArgs(s, &c.d, 0)
		} else {
			calls[i].args = r.callArgs(s, c.d.mode(), &c.d, c.idx, c.marker)
		}
	}
	if r.replicas != nil {
		r.execByNode(ctx, calls, writes(batch), followRedirect)
	} else {
		r.pipeline(ctx, batch, calls)
	}
	for i, c := range batch {
		if c.spans {
			c.err = errSpans
			continue
		}
		res, err := appendReply(nil, calls[i].reply)
		if err = cmp.Or(calls[i].err, err); err == nil {
			c.committed, err = readGroup(res, &c.d, c.idx, c.d.uniform(c.idx))
		}
		c.err = err
	}
}

// pipeline runs the calls of batch (but those over several slots) as one
// pipeline through the limiter's client, which routes each by its keys.
func (r *Limiter) pipeline(ctx context.Context, batch []*call, calls []scriptCall) {
	pipe := r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		if !c.spans {
			cmds[i] = pipe.Do(ctx, calls[i].args...)
		}
	}
	_, _ = pipe.Exec(ctx)
	for i, c := range batch {
		if c.spans {
			continue
		}
		calls[i].reply, calls[i].err = cmds[i].Text()
		if isNoScript(calls[i].err) {
			calls[i].reply, calls[i].err = calls[i].s.exec(ctx, r.client, calls[i].args)
		}
	}
}

// writes reports whether a round trip of batch records anything: all but
// a batch of checks do.
func writes(batch []*call) bool {
	for _, c := range batch {
		if c.d.op != opCheck {
			return true
		}
	}
	return false
}

// A connectBound ends the attempts to connect at by (mono), but leaves at
// least least from when a round trip starts; zero means no bound.
type connectBound struct {
	by    int64
	least time.Duration
}

// and returns the bound of a round trip that carries both b's and o's
// calls: the earlier.
func (b connectBound) and(o connectBound) connectBound {
	if b.by == 0 || o.by < b.by {
		b.by = o.by
	}
	b.least = min(b.least, o.least)
	return b
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

// directClient returns the client through which a lone decision on c is
// read by its caller (see Limiter.direct), for a limiter's timeout, or nil
// when c cannot serve: its reads follow the context, or its own read or
// write timeout is shorter than the direct read's, which would lengthen
// them.
func directClient(c *redis.Client, timeout time.Duration) *redis.Client {
	read := timeout - periodOf(timeout)
	opt := c.Options()
	shorter := func(d time.Duration) bool { return d > 0 && d < read }
	if read <= 0 || opt.ContextTimeoutEnabled || shorter(opt.ReadTimeout) || shorter(opt.WriteTimeout) {
		return nil
	}
	d := c.WithTimeout(read)
	// A clone's options are its own. Its retries would read again with a
	// whole timeout each; the limiter resends what needs resending.
	d.Options().MaxRetries = 0
	return d
}

// doer runs a command: every go-redis client and pipeline does.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// exec runs the command that args (from scriptArgs, with the keys and
// then the script's arguments appended) holds, and loads the script when
// the server does not know it (after SCRIPT FLUSH, a restart, a failover
// or on a new cluster node). It returns the reply as it came.
func (s *script) exec(ctx context.Context, c doer, args []any) (string, error) {
	reply, err := c.Do(ctx, args...).Text()
	if err != nil && isNoScript(err) {
		args[0], args[1] = cmdEval, s.src
		reply, err = c.Do(ctx, args...).Text()
		args[0], args[1] = cmdEvalSha, s.hash
	}
	return reply, err
}

// run is exec, with the reply's numbers appended to res.
func (s *script) run(ctx context.Context, c doer, args []any, res []int64) ([]int64, error) {
	reply, err := s.exec(ctx, c, args)
	if err != nil {
		return res, err
	}
	return appendReply(res, reply)
}
