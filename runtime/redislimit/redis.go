package redislimit

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Limiter is a runtime.Limiter whose counts live in Redis, so that every
// instance of a service shares them. It works with a single server, a Redis
// Cluster and a Sentinel-managed failover client alike: each decision is one
// Lua script (one per cluster slot involved, see Decide), run with EVALSHA
// and reloaded transparently when a server answers NOSCRIPT (after SCRIPT
// FLUSH, a restart, a failover or on a new cluster node). Time comes from
// the Redis server unless WithClock is given. It is safe for concurrent use.
//
// Concurrent decisions share round trips (see WithBatching): a decision
// that arrives while two are on their way waits for one of them to return
// and then goes with every other decision that arrived meanwhile, in one
// script call on a single server or one pipeline per node on a cluster.
// Denials are remembered until they expire and answered in process (see
// WithDenyCache), so a key under attack costs Redis nothing.
//
// When Redis fails or does not answer within the timeout, the decision
// follows the FailurePolicy; see WithFailurePolicy, WithTimeout and
// WithOnDegraded.
type Limiter struct {
	client   redis.UniversalClient
	cfg      config
	fallback runtime.Limiter
	breaker  breaker
	// batch lets concurrent decisions share round trips; nil without
	// batching.
	batch *batcher
	// settings checks the server settings that put counts at risk.
	settings configCheck
	// peers counts the limiters sharing the store, for FailLocal's share.
	peers *instances
	// answered is when (mono) the latest round trip Redis answered
	// was sent; checking says a check of Redis itself is running.
	answered atomic.Int64
	checking atomic.Bool
	// waiting counts the callers waiting for Redis.
	waiting atomic.Int32
	// readsFollowCtx says the client bounds reads by the context's
	// deadline (ContextTimeoutEnabled); see connectBound.
	readsFollowCtx bool
	// direct is the client through which a lone decision is read on its
	// caller's goroutine (see batcher.decide): the client itself, with no
	// retries of its own and read and write timeouts of the limiter's
	// timeout less one period of a wait, which directBound leaves to
	// getting a connection. It is nil where reads follow the context, on a
	// Cluster or a Ring, and when the client's own timeouts are shorter.
	direct *redis.Client
	// deny remembers Redis's denials (see WithDenyCache); nil when off.
	deny *denyCache
	// refusals spaces the logs of Redis refusing the limiter (see
	// ErrPermission).
	refusals refusalLog
}

// New returns a Limiter backed by c, which may be a *redis.Client, a
// *redis.ClusterClient, a *redis.Ring or a failover client. The defaults
// are: server time, prefix "ratelimit:", a 500ms timeout per decision (see WithTimeout), and
// FailLocal with an in-memory fallback.
func New(c redis.UniversalClient, opts ...Option) *Limiter {
	cfg := newConfig(opts)
	r := &Limiter{client: c, cfg: cfg, fallback: cfg.fallback, deny: newDenyCache(cfg.denyCache, cfg.clock)}
	if r.fallback == nil {
		var memOpts []runtime.MemoryOption
		if cfg.clock != nil {
			memOpts = append(memOpts, runtime.WithClock(cfg.clock))
		}
		r.fallback = runtime.NewMemoryLimiter(memOpts...)
	}
	r.breaker.interval = cfg.retryInterval
	r.peers = newInstances(cfg.prefix, cfg.instances)
	r.peers.onError = func(err error) { _ = r.refused(err, slog.String("in", "instance beat")) }
	switch c := c.(type) {
	case *redis.Client:
		r.readsFollowCtx = c.Options().ContextTimeoutEnabled
		r.direct = directClient(c, cfg.timeout)
	case *redis.ClusterClient:
		r.readsFollowCtx = c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		r.readsFollowCtx = c.Options().ContextTimeoutEnabled
	}
	if cfg.batching {
		r.batch = newBatcher(r)
		r.breaker.onTrip = r.batch.trip
	}
	return r
}

// Allow admits a call of cost 1 under l for key if the limit has room, and
// records it; otherwise it records nothing and reports when there will be
// room. It is Decide for one request, without the Decisions.
func (r *Limiter) Allow(ctx context.Context, l runtime.Limit, key string) (runtime.Decision, error) {
	reqs := [1]runtime.Request{{Limit: l, Key: key}}
	if err := runtime.Validate(reqs[:]...); err != nil {
		return runtime.Decision{}, err
	}
	var vs [1]verdict
	ds, err := r.decide(ctx, reqs[:], vs[:])
	if err != nil {
		return runtime.Decision{}, err
	}
	if ds.Each == nil {
		return vs[0].decision(), nil
	}
	return ds.Each[0], nil
}

// Decide decides a call as runtime.Limiter states, modes included, in one
// script call; a limit in runtime.ModeOff is not sent to Redis, and a call
// of off limits only asks nothing. An error means no decision was made: the
// requests were invalid, ctx was done on entry or cancelled, or Redis
// failed under FailClosed. A deadline of ctx that passes while Redis is
// asked is Redis failing to answer in time: the FailurePolicy decides.
//
// On a *redis.Client, a decision that finds no other on its way is sent
// and read on the caller's goroutine, as go-redis's own commands are, with
// the limiter's timeout (see WithTimeout) as the read's bound; once sent,
// it is waited for within that timeout even if ctx is cancelled meanwhile.
//
// Limits whose keys share a Redis Cluster slot (all limits on the same key
// do, whatever their names) are decided in one script, atomically. Limits on
// other slots are decided one slot after another, in a fixed order, each
// slot's admission resting on its enforced limits alone; when a later slot
// denies, what earlier slots recorded is refunded. In between, those
// admissions count, so concurrent calls may be denied that would otherwise
// have been admitted, but no limit ever admits more than its Max. On a
// single server or a Sentinel-managed one, every call is one script.
func (r *Limiter) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	if err := runtime.Validate(reqs...); err != nil {
		return runtime.Decisions{}, err
	}
	vs := make([]verdict, len(reqs))
	ds, err := r.decide(ctx, reqs, vs)
	if err == nil && ds.Each == nil {
		ds.Each = make([]runtime.Decision, len(vs))
		for i, v := range vs {
			ds.Each[i] = v.decision()
		}
	}
	return ds, err
}

// decide runs validated requests, following the failure policy when Redis
// does not answer. When Redis decides, the Decisions it returns have no
// Each: the verdicts are in vs, one per request, and the caller builds what
// it returns from them, so that Allow allocates nothing for them.
func (r *Limiter) decide(ctx context.Context, reqs []runtime.Request, vs []verdict) (runtime.Decisions, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Decisions{}, err
	}
	off := 0
	for i, q := range reqs {
		if q.Limit.Mode == runtime.ModeOff {
			vs[i] = offVerdict(q.Limit)
			off++
		}
	}
	if off == len(reqs) {
		return runtime.Decisions{Allowed: true}, nil
	}
	start := time.Now()
	t0, denied := r.deny.lookup(reqs, vs, start)
	if denied {
		// A caller answered from memory never blocks, and one that asks
		// again at once would keep its processor from the goroutines that
		// read Redis's replies, whose waits would then end unread.
		if r.waiting.Load() > 0 {
			goruntime.Gosched()
		}
		return runtime.Decisions{Source: runtime.SourceDenyCache}, nil
	}
	send, probe := r.breaker.allow(start)
	if !send {
		return r.degrade(ctx, reqs, r.breaker.openErr())
	}
	r.settings.due(r, start, reqs[0].Limit)
	r.peers.due(r.client, start)

	var stack [inlineLimits]ask
	d := decision{now: -1, asks: r.resolve(stack[:0], reqs), vs: vs}
	if r.cfg.clock != nil {
		d.now = r.cfg.clock().UnixMicro()
	}
	groups := r.groups(reqs)
	committed, err := r.run(ctx, start, &d, groups)
	r.deny.remember(reqs, vs, err, t0)
	if err == nil {
		if r.breaker.record(start, false, probe, nil) {
			// Redis is back: check its configuration again, it may be
			// a different server now.
			r.settings.reset()
		}
		return runtime.Decisions{Allowed: committed}, nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// The caller gave up; that says nothing about Redis.
		r.breaker.release(probe)
		return runtime.Decisions{}, ctx.Err()
	}
	// Anything else, the caller's deadline passing included, is Redis not
	// deciding in time: the policy answers, so that a caller with a short
	// deadline is protected like any other. The breaker opens only on
	// evidence about Redis, which a wait that this process's own pause
	// cut short is not.
	var silent *errSilent
	switch {
	case errors.Is(err, ErrCircuitOpen):
		r.breaker.release(probe)
		err = r.breaker.openErr()
	case errors.As(err, &silent) && !silent.noConn && (silent.paused || !probe),
		errors.As(err, &silent) && silent.noConn && silent.paused:
		// One wait that Redis left unanswered is not evidence of an
		// outage: its reply may be unread in a process that is busy or
		// was paused, or stuck behind a slow call; nor is a round trip
		// that got no connection by the end of a budget the process lost
		// to its own pause. A check of Redis itself, as patient with this
		// process's pauses as any wait, decides.
		r.breaker.release(probe)
		r.checkLiveness(d.asks[groups[0][0]].key, silent.w.budget)
	default:
		err = r.refused(err, slog.String("limit", reqs[0].Limit.Name))
		trip := tripsBreaker(err)
		r.breaker.record(time.Now(), trip, probe, err)
		if trip {
			r.reloadTopology()
		}
	}
	return r.degrade(context.WithoutCancel(ctx), reqs, err)
}

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

// run asks Redis for the decision d of the requests in groups (see
// groups), waiting as long as a wait from ctx, begun at start, allows.
func (r *Limiter) run(ctx context.Context, start time.Time, d *decision, groups [][]int) (committed bool, err error) {
	if len(groups) == 1 && r.batch != nil {
		return r.batch.decide(ctx, start, d, groups[0])
	}
	var w wait
	r.startWaitAt(ctx, &w, start)
	if len(groups) == 1 {
		return r.evalGroup(ctx, &w, modeDecide, d, groups[0])
	}
	d.receipts = make([]int64, len(d.asks))
	for gi, g := range groups {
		committed, err := r.evalGroup(ctx, &w, modeDecide, d, g)
		if err != nil {
			r.refund(ctx, d, recorded(d, groups[:gi]))
			return false, err
		}
		if !committed {
			r.refund(ctx, d, recorded(d, groups[:gi]))
			// Report every other slot's room as it now is, recording
			// nothing: the refunded slots' verdicts still describe their
			// undone commit, and the later slots were never asked.
			for j, other := range groups {
				if j != gi {
					_, _ = r.evalGroup(ctx, &w, modeCheck, d, other)
				}
			}
			return false, nil
		}
	}
	return true, nil
}

// recorded returns, of the committed groups, the requests whose limits
// recorded the call: the enforced ones and the shadow ones that had room.
// Groups that recorded nothing are left out.
func recorded(d *decision, groups [][]int) [][]int {
	out := make([][]int, 0, len(groups))
	for _, g := range groups {
		var rec []int
		for _, i := range g {
			if d.asks[i].code < shadowFlag || d.vs[i].ok {
				rec = append(rec, i)
			}
		}
		if len(rec) > 0 {
			out = append(out, rec)
		}
	}
	return out
}

// groups splits the requests Redis decides, those not in runtime.ModeOff,
// of which there is at least one, (by index) into the sets one script may
// decide together: everything on a single server; per hash tag, in tag
// order, on a Redis Cluster or Ring, where a script may only touch one
// slot.
func (r *Limiter) groups(reqs []runtime.Request) [][]int {
	if len(reqs) == 1 {
		return singleGroup
	}
	all := make([]int, 0, len(reqs))
	for i, q := range reqs {
		if q.Limit.Mode != runtime.ModeOff {
			all = append(all, i)
		}
	}
	switch r.client.(type) {
	case *redis.ClusterClient, *redis.Ring:
	default:
		return [][]int{all}
	}
	byTag := map[string][]int{}
	var tags []string
	for _, i := range all {
		tag := r.slotTag(reqs[i].Key)
		if _, ok := byTag[tag]; !ok {
			tags = append(tags, tag)
		}
		byTag[tag] = append(byTag[tag], i)
	}
	if len(tags) == 1 {
		return [][]int{all}
	}
	slices.Sort(tags)
	out := make([][]int, 0, len(tags))
	for _, t := range tags {
		out = append(out, byTag[t])
	}
	return out
}

// singleGroup is the grouping of every one-limit call; it is never modified.
var singleGroup = [][]int{{0}}

// refund undoes the admissions recorded for groups, best effort: if Redis
// fails now, those admissions keep counting until they expire, which can
// only deny calls, never admit extra ones. Each group's refund carries a
// marker key of its own, so that a client resending the command after a
// lost reply cannot refund twice.
func (r *Limiter) refund(ctx context.Context, d *decision, groups [][]int) {
	if len(groups) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	refund := *d
	refund.now = -1
	for _, idx := range groups {
		s := scriptOf(d, idx)
		args := r.callArgs(s, modeRefund, &refund, idx, true)
		var w wait
		r.startWait(ctx, &w)
		_, _ = r.eval(ctx, &w, s, args)
	}
}

// refundMarker returns a new key in the cluster slot of the storage key
// skey, unique to one refund.
func (r *Limiter) refundMarker(skey string) string {
	// The prefix and "{" tag "}" that begin skey.
	slot := skey[:len(r.cfg.prefix)+2+tagLen]
	b := make([]byte, 0, len(slot)+32)
	b = append(b, slot...)
	b = append(b, "refund:"...)
	b = strconv.AppendUint(b, rand.Uint64(), 36)
	b = append(b, '.')
	b = strconv.AppendUint(b, rand.Uint64(), 36)
	return string(b)
}

func (r *Limiter) storageKey(l runtime.Limit, key string) string {
	// Build in a stack buffer when the key is short, so the string is the
	// only allocation.
	var stack [256]byte
	if h := r.cfg.keyHash; h != nil {
		return string(appendHashedStorageKey(stack[:0], h, r.cfg.prefix, specOf(l).tag, l.Name, key))
	}
	return string(appendStorageKey(stack[:0], r.cfg.prefix, specOf(l).tag, l.Name, key))
}

// eval runs the script command args on a goroutine of its own and waits
// for its reply as long as w allows. The command itself is bounded only by
// the client's own read and write timeouts: a reply that arrives while this
// process is paused is still read when it resumes, and decides. An
// abandoned call may still be recorded when Redis answers late; that
// over-counts, never over-admits.
func (r *Limiter) eval(ctx context.Context, w *wait, s *script, args []any) ([]int64, error) {
	return r.exchange(ctx, w, func(ctx context.Context) ([]int64, error) { return s.run(ctx, r.client, args, nil) })
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

// connectBound bounds how long a round trip for w may take to get a
// connection (the pool's wait, dialing, go-redis's retries): until a little
// before w's budget ends, so that a dead server is found dead, and the
// breaker opens on that, before the wait ends in a silence that needs a
// check. It bounds nothing once the command is written, as go-redis reads
// without the context's deadline, except on a client with
// ContextTimeoutEnabled, where it is zero (no bound): there it would let a
// paused process cut off a reply that arrived.
func (r *Limiter) connectBound(w *wait) connectBound {
	if r.readsFollowCtx {
		return connectBound{}
	}
	return connectBound{by: w.end - int64(w.period()/2), least: w.period()}
}

// directBound bounds how long a lone call that its caller reads (see
// Limiter.direct) may take to get a connection: one period of w, which
// the direct read's timeout leaves of w's budget. Past it, the call is
// handed to a round trip of its own.
func directBound(w *wait) connectBound {
	return connectBound{by: w.start + int64(w.period())}
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

// roundTrip is one command's reply, complete once done is closed.
type roundTrip struct {
	res  []int64
	err  error
	done chan struct{}
}
