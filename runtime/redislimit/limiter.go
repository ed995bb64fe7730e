package redislimit

import (
	"context"
	"errors"
	"log/slog"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// Limiter is a runtime.Limiter whose counts live in Redis, so that every
// instance of a service shares them. It works with a single server, a Redis
// Cluster and a Sentinel-managed failover client alike: each decision is one
// Lua script (one per cluster node or slot involved, see Decide), run with EVALSHA
// and reloaded transparently when a server answers NOSCRIPT (after SCRIPT
// FLUSH, a restart, a failover or on a new cluster node). Time comes from
// the Redis server unless WithClock is given. It is safe for concurrent use.
//
// Concurrent decisions share round trips (see WithBatching): a decision
// that arrives while two are on their way waits for one of them to return
// and then goes with every other decision that arrived meanwhile, in one
// script call (on a Cluster or a Ring, one per node, each node's round
// trips counted apart: one under way per Cluster node).
// Denials are remembered until they expire and answered in process (see
// WithDenyCache), so a key under attack costs Redis nothing. With
// WithLeases, a key hot at this limiter is decided in process from units
// leased from Redis and recorded there as admitted, so one key can admit
// beyond what its Redis node decides per call.
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
	// batching. On a Cluster or a Ring, it is the first of the lanes,
	// which hold a batcher per node.
	batch *batcher
	lanes *lanes
	// settings checks the server settings that put counts at risk.
	settings evictionCheck
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
	// sharded says the client spreads keys over servers by slot (a Redis
	// Cluster or a Ring), where one script may touch one slot only.
	sharded bool
	// direct is the client through which a lone decision is read on its
	// caller's goroutine (see batcher.decide): the client itself, with no
	// retries of its own and read and write timeouts of the limiter's
	// timeout less one period of a wait, which directBound leaves to
	// getting a connection. It is nil where reads follow the context, on a
	// Cluster or a Ring, and when the client's own timeouts are shorter.
	direct *redis.Client
	// deny remembers Redis's denials (see WithDenyCache); nil when off.
	deny *denyCache
	// leases holds the leases of hot keys (see WithLeases); nil when off.
	leases *leaseTable
	// refusals spaces the logs of Redis refusing the limiter (see
	// ErrPermission).
	refusals refusalLog
	// replicas holds the nodes' replica counts of a durable limiter (see
	// WithDurable); nil when decisions do not wait for replicas.
	replicas *replicaCounts
	// zones holds the zones of calendar limits, each loaded once (see
	// resolveCalendars).
	zones runtime.CalendarZones
}

// New returns a Limiter backed by c, which may be a *redis.Client, a
// *redis.ClusterClient, a *redis.Ring or a failover client. The defaults
// are: server time, prefix "ratelimit:", a 500ms timeout per decision (see WithTimeout), and
// FailLocal with an in-memory fallback.
func New(c redis.UniversalClient, opts ...Option) *Limiter {
	cfg := newConfig(opts)
	r := &Limiter{client: c, cfg: cfg, fallback: cfg.fallback, deny: newDenyCache(cfg.denyCache, cfg.clock)}
	if r.fallback == nil {
		var memOpts []memlimit.Option
		if cfg.clock != nil {
			memOpts = append(memOpts, memlimit.WithClock(cfg.clock))
		}
		r.fallback = memlimit.New(memOpts...)
	}
	r.leases = newLeaseTable(r, cfg.leasePeriod)
	r.breaker.interval = cfg.retryInterval
	r.peers = newInstances(cfg.prefix, cfg.instances)
	r.peers.onError = func(err error) { _ = r.refused(err, slog.String("in", "instance beat")) }
	switch c := c.(type) {
	case *redis.Client:
		r.readsFollowCtx = c.Options().ContextTimeoutEnabled
		r.direct = directClient(c, cfg.timeout)
	case *redis.ClusterClient:
		r.readsFollowCtx, r.sharded = c.Options().ContextTimeoutEnabled, true
	case *redis.Ring:
		r.readsFollowCtx, r.sharded = c.Options().ContextTimeoutEnabled, true
	}
	if cfg.durableWait > 0 {
		r.replicas = newReplicaCounts(r)
	}
	if cfg.batching {
		kind := laneServer
		if r.sharded {
			kind = lanePipeline
		}
		r.batch = newBatcher(r, kind)
		r.lanes = newLanes(r, c)
		r.breaker.onTrip = r.tripBatches
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
	ds, err := r.decide(ctx, reqs[:], vs[:], nil)
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
// do, whatever their names) are decided in one script, atomically, and so
// are limits on slots that one Cluster node serves, with batching on.
// Limits on other nodes' slots are decided one slot after another, in a
// fixed order, each
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
	ds, err := r.decide(ctx, reqs, vs, nil)
	if err == nil && ds.Each == nil {
		ds.Each = decisions(vs)
	}
	return ds, err
}

// decisions returns the Decisions' Each of the verdicts vs.
func decisions(vs []verdict) []runtime.Decision {
	each := make([]runtime.Decision, len(vs))
	for i, v := range vs {
		each[i] = v.decision()
	}
	return each
}

// decide runs validated requests, following the failure policy when Redis
// does not answer. When Redis decides, the Decisions it returns have no
// Each: the verdicts are in vs, one per request, and the caller builds what
// it returns from them, so that Allow allocates nothing for them. kept is
// nil but for Hold, whose call keeps there what settling it needs.
func (r *Limiter) decide(ctx context.Context, reqs []runtime.Request, vs []verdict, kept *kept) (runtime.Decisions, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Decisions{}, err
	}
	var stack [inlineLimits]ask
	asks, on := resolveLimits(stack[:0], reqs, vs)
	if !on {
		return runtime.Decisions{Allowed: true}, nil
	}
	if err := r.resolveCalendars(asks, reqs); err != nil {
		return runtime.Decisions{}, err
	}
	if kept == nil {
		if i := permitAt(asks); i >= 0 {
			return runtime.Decisions{}, errPermitDecided(reqs[i].Limit)
		}
	}
	if r.leases != nil {
		if l := r.leases.admit(reqs, asks, vs); l != nil {
			if kept != nil {
				kept.lease = l
			}
			return runtime.Decisions{Allowed: true, Source: runtime.SourceLease}, nil
		}
	}
	start := time.Now()
	t0, denied := r.deny.lookup(reqs, asks, vs, start)
	if denied {
		// A caller answered from memory never blocks, and one that asks
		// again at once would keep its processor from the goroutines that
		// read Redis's replies, whose waits would then end unread.
		if r.waiting.Load() > 0 {
			goruntime.Gosched()
		}
		return runtime.Decisions{Source: runtime.SourceDenyCache}, nil
	}
	// Redis decides unless its breaker is open; what it cannot decide,
	// the policy does, entered here alone.
	var cause error
	if send, probe := r.breaker.allow(start); !send {
		cause = r.breaker.openErr()
	} else {
		r.startDue(start, reqs[0].Limit)
		d := resolvedCall{now: -1, asks: asks, vs: vs}
		if kept != nil {
			d.receipts = kept.receipts
			if kept.wait != nil {
				d.op, d.used = opWait, kept.wait
			}
		}
		r.placeKeys(d.asks, reqs)
		if r.cfg.clock != nil {
			d.now = r.cfg.clock().UnixMicro()
		}
		groups := singleGroup
		if len(reqs) > 1 {
			groups = r.groups(d.asks)
		}
		committed, err := r.run(ctx, start, &d, groups)
		r.deny.remember(reqs, &d, err, t0)
		switch {
		case err == nil:
			r.succeeded(start, probe)
			return runtime.Decisions{Allowed: committed}, nil
		case errors.Is(ctx.Err(), context.Canceled):
			// The caller gave up; that says nothing about Redis.
			r.breaker.release(probe)
			return runtime.Decisions{}, ctx.Err()
		}
		// Anything else, the caller's deadline passing included, is Redis
		// not deciding in time: the policy answers, so that a caller with
		// a short deadline is protected like any other.
		cause = r.failed(err, probe, d.asks[groups[0][0]].key, reqs[0].Limit.Name)
		ctx = context.WithoutCancel(ctx)
	}
	return r.degrade(ctx, reqs, asks, vs, cause, kept)
}

// runGroup asks Redis what d.op asks of the requests of d in g, one
// slot: through the batcher that serves the slot, so that checks and
// settles share round trips with decisions, or else in a script call of
// its own, waiting as long as a wait from ctx, begun at start, allows.
func (r *Limiter) runGroup(ctx context.Context, start time.Time, d *resolvedCall, g []int) (bool, error) {
	if r.batch != nil {
		b := r.batch
		if r.lanes != nil {
			b = r.lanes.of(d.asks[g[0]].key)
		}
		return b.decide(ctx, start, d, g)
	}
	var w wait
	r.startWaitAt(ctx, &w, start)
	return r.evalGroup(ctx, &w, d.mode(), d, g)
}

// run asks Redis for the decision d of the requests in groups (see
// groups), waiting as long as a wait from ctx, begun at start, allows.
func (r *Limiter) run(ctx context.Context, start time.Time, d *resolvedCall, groups [][]int) (committed bool, err error) {
	if len(groups) == 1 && r.batch != nil {
		b := r.batch
		if r.lanes != nil {
			b = r.lanes.of(d.asks[groups[0][0]].key)
		}
		return b.decide(ctx, start, d, groups[0])
	}
	if b := r.lanes.spanned(d, groups); b != nil {
		// One node serves every slot: one script call decides them all
		// at once, unless the node tells otherwise.
		committed, err := b.decide(ctx, start, d, slices.Concat(groups...))
		if !errors.Is(err, errSpans) {
			return committed, err
		}
	}
	var w wait
	r.startWaitAt(ctx, &w, start)
	if len(groups) == 1 {
		return r.evalGroup(ctx, &w, modeDecide, d, groups[0])
	}
	return r.decideSlots(ctx, &w, d, groups)
}

// singleGroup is the grouping of every one-limit call; it is never modified.
var singleGroup = [][]int{{0}}
