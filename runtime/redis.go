package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisLimiter is a Limiter whose counts live in Redis, so that every
// instance of a service shares them. It works with a single server, a Redis
// Cluster and a Sentinel-managed failover client alike: each decision is one
// Lua script (one per cluster slot involved, see AllowAll), run with EVALSHA
// and reloaded transparently when a server answers NOSCRIPT (after SCRIPT
// FLUSH, a restart, a failover or on a new cluster node). Time comes from
// the Redis server unless WithClock is given. It is safe for concurrent use.
//
// When Redis fails or does not answer within the timeout, the decision
// follows the FailurePolicy; see WithFailurePolicy, WithTimeout and
// WithOnDegraded.
type RedisLimiter struct {
	client   redis.UniversalClient
	cfg      config
	fallback Limiter
	breaker  breaker
	// scripter runs the scripts: the client itself, or a copy of it whose
	// read and write timeouts are the limiter's timeout.
	scripter redis.Scripter
	// boundedByClient is true when scripter itself gives up by the
	// decision's deadline; otherwise eval waits on a goroutine so that the
	// timeout holds whatever the client's read timeout is.
	boundedByClient bool
}

// NewRedisLimiter returns a Limiter backed by c, which may be a
// *redis.Client, a *redis.ClusterClient or a failover client. The defaults
// are: server time, prefix "ratelimit:", a 100ms timeout per decision, and
// FailLocal with an in-memory fallback.
func NewRedisLimiter(c redis.UniversalClient, opts ...Option) *RedisLimiter {
	cfg := newConfig(opts)
	r := &RedisLimiter{client: c, cfg: cfg, fallback: cfg.fallback}
	if r.fallback == nil {
		var memOpts []Option
		if cfg.clock != nil {
			memOpts = append(memOpts, WithClock(cfg.clock))
		}
		r.fallback = NewMemoryLimiter(memOpts...)
	}
	r.breaker.interval = cfg.retryInterval
	r.scripter = c
	switch c := c.(type) {
	case *redis.Client:
		// A copy sharing c's connections, with the limiter's timeout as
		// its read and write timeouts: a hung server is abandoned on time
		// without a goroutine per decision, and c's own settings stay as
		// the caller made them. The pool wait and dialing follow the
		// decision's context either way.
		r.boundedByClient = true
		if !c.Options().ContextTimeoutEnabled {
			r.scripter = c.WithTimeout(cfg.timeout)
		}
	case *redis.ClusterClient:
		r.boundedByClient = c.Options().ContextTimeoutEnabled
	}
	return r
}

// Allow is AllowN with a cost of 1.
func (r *RedisLimiter) Allow(ctx context.Context, l Limit, key string) (Decision, error) {
	return r.AllowN(ctx, l, key, 1)
}

// AllowN admits a call costing n units if the limit has room for all of
// them, and records them; otherwise it records nothing and reports when
// there will be room. An error means no decision was made: the request was
// invalid, ctx was done, or Redis failed under FailClosed.
func (r *RedisLimiter) AllowN(ctx context.Context, l Limit, key string, n int) (Decision, error) {
	if err := checkRequest(l, n); err != nil {
		return Decision{}, err
	}
	ds, err := r.decide(ctx, []Request{{Limit: l, Key: key, Cost: n}})
	if err != nil {
		return Decision{}, err
	}
	return ds.Each[0], nil
}

// AllowAll admits a call only if every request's limit has room, recording
// it in all of them; otherwise it records nothing.
//
// Limits whose keys share a Redis Cluster slot (all limits on the same key
// do, whatever their names) are decided in one script, atomically. Limits on
// other slots are decided one slot after another, in a fixed order; when a
// later slot denies, the admissions already recorded on earlier slots are
// refunded. In between, those admissions count, so concurrent calls may be
// denied that would otherwise have been admitted, but no limit ever admits
// more than its Max. On a single server or a Sentinel-managed one, every
// call is one script.
func (r *RedisLimiter) AllowAll(ctx context.Context, reqs ...Request) (Decisions, error) {
	if err := checkRequests(reqs); err != nil {
		return Decisions{}, err
	}
	return r.decide(ctx, reqs)
}

// decide runs validated requests, following the failure policy when Redis
// does not answer.
func (r *RedisLimiter) decide(ctx context.Context, reqs []Request) (Decisions, error) {
	if err := ctx.Err(); err != nil {
		return Decisions{}, err
	}
	start := time.Now()
	ask, probe := r.breaker.allow(start)
	if !ask {
		return r.degrade(ctx, reqs, ErrCircuitOpen)
	}

	ds, err := r.run(ctx, reqs)
	if err == nil {
		r.breaker.record(start, false, probe)
		return ds, nil
	}
	if ctx.Err() != nil {
		// The caller gave up; that says nothing about Redis.
		r.breaker.record(start, false, probe)
		return Decisions{}, ctx.Err()
	}
	trip := tripsBreaker(err)
	r.breaker.record(time.Now(), trip, probe)
	if trip {
		r.reloadTopology()
	}
	return r.degrade(ctx, reqs, err)
}

// degrade makes the decision Redis could not make, per the policy.
func (r *RedisLimiter) degrade(ctx context.Context, reqs []Request, cause error) (Decisions, error) {
	ev := DegradedEvent{Limit: reqs[0].Limit, Policy: r.cfg.policy, Err: cause}
	var (
		ds  Decisions
		err error
	)
	switch r.cfg.policy {
	case FailOpen:
		ds = Decisions{Allowed: true, Each: make([]Decision, len(reqs)), Denied: -1}
		for i, q := range reqs {
			ds.Each[i] = Decision{Allowed: true, Remaining: q.Limit.capacity() - q.cost()}
		}
	case FailClosed:
		err = &UnavailableError{Limit: reqs[0].Limit, Err: cause}
	default:
		ds, err = AllowAll(ctx, r.fallback, reqs...)
		if err != nil {
			err = &UnavailableError{Limit: reqs[0].Limit, Err: fmt.Errorf("%v; the local fallback failed too: %w", cause, err)}
		}
	}
	if len(ds.Each) > 0 {
		ev.Decision = ds.Each[0]
	}
	if r.cfg.onDegraded != nil {
		r.cfg.onDegraded(ev)
	}
	return ds, err
}

// reloadTopology makes a cluster client re-read the slot map after a
// failure. go-redis reloads it on MOVED or ASK, or once a minute, but not
// when a crashed master refuses connections; without this the limiter
// would stay degraded for up to a minute after a replica took over.
func (r *RedisLimiter) reloadTopology() {
	if c, ok := r.client.(interface{ ReloadState(context.Context) }); ok {
		c.ReloadState(context.Background())
	}
}

// run asks Redis for the decision within the configured timeout.
func (r *RedisLimiter) run(ctx context.Context, reqs []Request) (Decisions, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	now := int64(-1)
	if r.cfg.clock != nil {
		now = r.cfg.clock().UnixMicro()
	}
	vs := make([]verdict, len(reqs))
	receipts := make([]int64, len(reqs))
	groups := r.groups(reqs)
	for gi, g := range groups {
		committed, err := r.evalGroup(ctx, modeDecide, now, reqs, g, vs, receipts)
		if err != nil {
			r.refund(ctx, reqs, groups[:gi], receipts)
			if isTimeout(err) {
				err = fmt.Errorf("no answer within %v: %w", r.cfg.timeout, err)
			}
			return Decisions{}, err
		}
		if !committed {
			r.refund(ctx, reqs, groups[:gi], receipts)
			// Report every other slot's room as it now is, recording
			// nothing: the refunded slots' verdicts still describe their
			// undone commit, and the later slots were never asked.
			for j, other := range groups {
				if j != gi {
					_, _ = r.evalGroup(ctx, modeCheck, now, reqs, other, vs, receipts)
				}
			}
			return combine(vs, false), nil
		}
	}
	return combine(vs, true), nil
}

// groups splits reqs (by index) into the sets one script may decide
// together: everything on a single server; per hash tag, in tag order, on a
// Redis Cluster or Ring, where a script may only touch one slot.
func (r *RedisLimiter) groups(reqs []Request) [][]int {
	if len(reqs) == 1 {
		return singleGroup
	}
	all := make([]int, len(reqs))
	for i := range all {
		all[i] = i
	}
	switch r.client.(type) {
	case *redis.ClusterClient, *redis.Ring:
	default:
		return [][]int{all}
	}
	byTag := map[string][]int{}
	var tags []string
	for i, q := range reqs {
		tag := string(appendTag(nil, q.Key))
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

// Script arguments that are the same for every call, boxed once.
var (
	modeDecide any = "a"
	modeCheck  any = "c"
	modeRefund any = "r"
)

// evalGroup runs the script in mode ("a" decide, "c" check only) for the
// requests at idx, filling their verdicts and receipts. It reports whether
// the group's admissions were recorded.
func (r *RedisLimiter) evalGroup(ctx context.Context, mode any, now int64, reqs []Request, idx []int, vs []verdict, receipts []int64) (bool, error) {
	keys, args := r.scriptInput(mode, now, reqs, idx, receipts)
	res, err := r.eval(ctx, scriptFor(reqs, idx), keys, args...)
	if err != nil {
		return false, err
	}
	if len(res) != 1+5*len(idx) {
		return false, fmt.Errorf("ratelimit: unexpected script reply %v; is the server Redis 5 or newer?", res)
	}
	for j, i := range idx {
		f := res[1+5*j:]
		vs[i] = verdict{ok: f[0] == 1, remaining: f[1], retry: f[2], reset: f[3]}
		receipts[i] = f[4]
	}
	return res[0] == 1, nil
}

// refund undoes the admissions recorded for groups, best effort: if Redis
// fails now, those admissions keep counting until they expire, which can
// only deny calls, never admit extra ones.
func (r *RedisLimiter) refund(ctx context.Context, reqs []Request, groups [][]int, receipts []int64) {
	if len(groups) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.timeout)
	defer cancel()
	for _, idx := range groups {
		keys, args := r.scriptInput(modeRefund, -1, reqs, idx, receipts)
		_, _ = r.eval(ctx, scriptFor(reqs, idx), keys, args...)
	}
}

// scriptInput builds the KEYS and ARGV of one script call for the requests
// at idx, in the layout lua/main.lua documents.
func (r *RedisLimiter) scriptInput(mode any, now int64, reqs []Request, idx []int, receipts []int64) ([]string, []any) {
	keys := make([]string, len(idx))
	args := make([]any, 0, 2+6*len(idx))
	args = append(args, mode, now)
	for j, i := range idx {
		q := reqs[i]
		keys[j] = r.storageKey(q.Limit, q.Key)
		p := paramsOf(q.Limit, q.cost())
		args = append(args, algoSpecs[q.Limit.algorithm()].arg, p.window, p.max, p.burst, p.cost, receipts[i])
	}
	return keys, args
}

func (r *RedisLimiter) storageKey(l Limit, key string) string {
	// Build in a stack buffer when the key is short, so the string is the
	// only allocation.
	var stack [256]byte
	return string(appendStorageKey(stack[:0], r.cfg.prefix, algoSpecs[l.algorithm()].tag, l.Name, key))
}

// eval runs the script, returning by ctx's deadline even when the client
// would wait longer for a reply (a ClusterClient's ReadTimeout, 3s by
// default, applies unless ContextTimeoutEnabled is set). An abandoned call
// may still be recorded when Redis answers late; that over-counts, never
// over-admits.
func (r *RedisLimiter) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]int64, error) {
	if r.boundedByClient {
		return script.Run(ctx, r.scripter, keys, args...).Int64Slice()
	}
	type reply struct {
		res []int64
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		res, err := script.Run(ctx, r.scripter, keys, args...).Int64Slice()
		ch <- reply{res, err}
	}()
	select {
	case rep := <-ch:
		return rep.res, rep.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// isTimeout reports whether err is the decision's deadline passing, either
// as the context's error or as a connection's read or write timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// tripsBreaker reports whether err suggests Redis itself is unavailable, as
// opposed to a problem with one key (a key of another type, say), which
// should not send every other key to the fallback.
func tripsBreaker(err error) bool {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		return !strings.HasPrefix(msg, "WRONGTYPE") && !strings.HasPrefix(msg, "ERR")
	}
	return true
}
