package redislimit

import (
	"log/slog"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Option configures a Limiter.
type Option func(*config)

// config holds every option's value; the zero value is never used directly,
// defaults come from newConfig.
type config struct {
	clock         func() time.Time
	prefix        string
	timeout       time.Duration
	policy        FailurePolicy
	fallback      runtime.Limiter
	retryInterval time.Duration
	onDegraded    func(DegradedEvent)
	logger        *slog.Logger
	batching      bool
	denyCache     int
	instances     int
	// keyHash stores keys hashed (WithHashedKeys); nil stores them as
	// they are.
	keyHash *keyHasher
	// leasePeriod is WithLeases's period; 0 when leases are off.
	leasePeriod time.Duration
	// durableWait is WithDurable's bound; 0 when decisions do not wait
	// for replicas.
	durableWait time.Duration
	// durableReplicas, when > 0, replaces the number of replicas read
	// from the server: only the fault suite's negative control sets it.
	durableReplicas int
	// calendarClock, when set, replaces time.Now for the boundaries of
	// calendar windows while decisions stay on Redis's clock: only tests
	// whose servers' clocks are offset set it.
	calendarClock func() time.Time
}

const (
	defaultPrefix        = "ratelimit:"
	defaultTimeout       = 500 * time.Millisecond
	defaultRetryInterval = 500 * time.Millisecond
	defaultDenyCache     = 1 << 20
)

func newConfig(opts []Option) config {
	c := config{
		prefix:        defaultPrefix,
		timeout:       defaultTimeout,
		policy:        FailLocal,
		retryInterval: defaultRetryInterval,
		batching:      true,
		denyCache:     defaultDenyCache,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithClock makes the limiter read time from now instead of the Redis
// server's TIME, for deterministic tests. Decisions are then exact only as
// far as the callers' clocks agree: admissions made by a client whose clock
// runs s behind another's stop counting s early for the other, so across
// both a window can admit up to about 2*Max as s nears Window. Keys expire
// on Redis's clock, 1s after their contents stop counting.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.clock = now }
}

// WithPrefix sets the prefix of every Redis key the limiter writes (default
// "ratelimit:"). Braces, which would choose a Redis Cluster slot, are
// percent-encoded, and prefixes longer than 64 bytes are hashed, so that
// stored keys stay short.
func WithPrefix(p string) Option {
	return func(c *config) { c.prefix = sanitizePrefix(p) }
}

// WithTimeout bounds how long one decision waits for Redis (default
// 500ms), counting only the time this process could run: a pause of the
// process (SIGSTOP, a CPU quota, a long stop of the world) does not count,
// so a reply that arrives meanwhile still decides. The caller's deadline
// ends the wait in any case, and no wait lasts longer than 10*d. When a
// wait ends without a reply, that decision follows the FailurePolicy, and a
// check of Redis itself decides whether the breaker opens (see
// WithRetryInterval); callers still waiting for a shared round trip are
// then released at once, and a lone decision that its caller reads itself
// (on a *redis.Client, see Limiter.Decide) ends within d. A d <= 0 keeps
// the default.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithFailurePolicy sets what a decision does when Redis fails or times out
// (default FailLocal).
func WithFailurePolicy(p FailurePolicy) Option {
	return func(c *config) { c.policy = p }
}

// WithFallback sets the Limiter that FailLocal consults while Redis is
// unavailable (default: a memlimit.Limiter sharing this limiter's
// clock). It is asked with each limit's share (see WithInstances).
func WithFallback(l runtime.Limiter) Option {
	return func(c *config) { c.fallback = l }
}

// WithInstances says how many limiters (app instances) share the store, n
// >= 1. While Redis is unavailable, FailLocal's fallback decides each limit
// with Max, and Burst when set, divided by n, rounded down, at least 1: in
// a window that an outage cuts in two, the fleet admits at most
// Max + n*max(1, Max/n), which is at most 2*Max when n <= Max. A call whose
// cost exceeds an enforced limit's share is denied; a shadow limit whose
// share is too small has no room, and denies nothing. An n larger than the
// fleet only makes the shares smaller.
//
// Without it, each limiter stamps its id in Redis (one small script every
// 10s, in the key prefix+"instances") and counts the limiters of the same
// prefix seen within 30s, and the bound above holds for the count last
// read, from one beat after the fleet last grew. Until a limiter has read a
// count (Redis failed from its start, or refuses the script), FailLocal
// knows no share and denies every call with an enforced limit, citing
// ErrInstancesUnknown: the fleet then admits nothing beyond what Redis
// admitted.
func WithInstances(n int) Option {
	return func(c *config) { c.instances = max(0, n) }
}

// WithRetryInterval sets how long a Limiter stops asking Redis after a
// failure (default 500ms): an error about the whole server, or a missed
// deadline that a check of Redis confirms (see WithTimeout). During that
// time decisions follow the FailurePolicy at once instead of waiting for a
// timeout each; afterwards a single call probes Redis and, if it answers,
// normal operation resumes.
// A d <= 0 keeps the default.
func WithRetryInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.retryInterval = d
		}
	}
}

// WithOnDegraded registers a function called for every decision that Redis
// did not make (FailOpen, FailClosed or FailLocal took over), so operators
// can count and alert on degraded decisions, and once per finding of a
// Redis that may evict counts (ErrEvictionRisk). It runs synchronously on
// the caller's goroutine (the configuration finding on a goroutine of its
// own) and must be fast and safe for concurrent use.
func WithOnDegraded(f func(DegradedEvent)) Option {
	return func(c *config) { c.onDegraded = f }
}

// WithLogger sets where a Limiter logs what an operator must fix: a Redis
// that may evict its keys (ErrEvictionRisk), logged once per finding at
// level Warn; a Redis that refuses the limiter a command or key
// (ErrPermission), and FailLocal denying for want of an instance count
// (ErrInstancesUnknown), logged at level Error, once per cause and then at
// most once a minute. The default is slog.Default() at the time of logging.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithBatching turns the batching of concurrent decisions on (the default)
// or off. While two decisions are on their way to Redis (on a Cluster, one
// per node), decisions that arrive wait for one of them to return and then
// go together, in one script call per node, each still atomic and decided
// in arrival order. A lone caller never waits for company, and every
// caller's context and the limiter's timeout still bound its own wait.
func WithBatching(on bool) Option {
	return func(c *config) { c.batching = on }
}

// WithDenyCache sets how many bytes the limiter may use to remember
// Redis's denials in process (default 1 MiB; 0 turns it off). A denial with
// RetryAfter r proves that no call of that cost under the same limit values
// and key is admitted for r (denials record nothing; other calls only take
// room), so until then such calls are denied without a round trip, with
// Decisions.Source SourceDenyCache, even while Redis is unavailable. The
// cache never admits. Its RetryAfter is never shorter than Redis's own.
// A call with several limits is answered only when every limit is covered,
// off limits aside, and at least one covered limit is enforced: a shadow
// limit's denial never denies a call, though it may be learnt from an
// admitted one and denies that limit once it is enforced.
//
// It can deny what Redis would admit only when room appears that no denial
// foresees, and then for at most r: a multi-limit call on a Redis Cluster
// or Ring refunding its admissions (this limiter forgets what its own
// refunds contradict), a held call settled below its reservation on
// another limiter (this one forgets its denials of the keys it settles
// down or resets), Redis losing counts (a failover that loses writes,
// eviction, a key deleted by hand), calls under other values of the same
// limit and key during a rolling change, or clocks that jump. A denial
// costs about 200 bytes plus its Name and key; the least recently used go
// first when the cache is full.
func WithDenyCache(maxBytes int) Option {
	return func(c *config) { c.denyCache = max(0, maxBytes) }
}

// WithHashedKeys stores each key in Redis as a keyed hash, so that no key
// (an e-mail address, an API key, a client address) appears in Redis: not
// in its keys (SCAN, RDB and AOF files), the settle markers, nor any
// command it runs or logs (MONITOR, SLOWLOG). A key is stored as the first
// 128 bits of HMAC-SHA256(secret, key), 22 bytes of unpadded base64url;
// limit names stay in the clear. Among n keys, two share a count with
// probability below n²/2^129 (2^-65 for 2^32 keys), and then each is denied
// early, never admitted beyond its Max; without the secret, no one can pick
// keys that share a count.
//
// The price: a count can no longer be found by its key with SCAN, only by
// recomputing the hash (docs/redis.md shows how). Every limiter that shares
// the counts needs the same secret; a different secret, or none, keeps
// counts of its own, so changing the secret, or turning hashing on or off,
// resets every count: each key may admit Max again.
//
// secret must hold at least 32 bytes, such as 32 random ones; it is
// copied. New panics on a shorter one, which is a mistake of wiring (an
// unset variable, commonly) that must not start a limiter that would store
// keys in the clear or under a guessable hash.
func WithHashedKeys(secret []byte) Option {
	h, err := newKeyHasher(secret)
	return func(c *config) {
		if err != nil {
			panic(err)
		}
		c.keyHash = h
	}
}

// logger returns the limiter's logger: WithLogger's, or slog's default at
// the time of the call.
func (r *Limiter) logger() *slog.Logger {
	if r.cfg.logger != nil {
		return r.cfg.logger
	}
	return slog.Default()
}

// WithLeases lets a key that is hot at this limiter be decided in process,
// from leases of units pre-paid in Redis, so that one key can admit beyond
// what one Redis node decides per call (default off). A key leases once
// this limiter is asked for at least 8 units of it within one period, on a
// limit of an algorithm that leases (every one but SlidingLog), enforced
// (not shadow), alone in its call. A lease of k units is k admissions,
// recorded in Redis when granted, sized to the key's rate here times
// period, capped by a share of the limit's capacity among the instances
// (see WithInstances); it lives at most 10*period (a fixed window's ends
// with its window, a sliding window's with its tenth of the window) and
// gives back what it did not use when it ends. So leases never admit more
// than the limit allows; what they change is stated per algorithm in
// docs/redis.md: units one instance holds cannot serve another, and a
// window-based limit may deny earlier than it would without leases.
// Decisions made from a lease report runtime.SourceLease. A period <= 0
// keeps leases off.
func WithLeases(period time.Duration) Option {
	return func(c *config) { c.leasePeriod = max(period, 0) }
}

// WithDurable makes every decision that records admissions wait until each
// replica of the Redis node that made it has acknowledged its writes (WAIT,
// on the connection that ran the script), for at most wait, and admit only
// then: a failover to any replica then forgets no admission that a caller
// was told of. The replicas counted are every replica the node has had
// (see docs/redis.md), not those connected at the moment, so while one is
// down no decision on that node is durable. A decision not acknowledged
// in time stays recorded on the node and follows the FailurePolicy with
// ErrNotReplicated; only FailClosed then keeps every admission durable.
// Concurrent decisions batched together share one WAIT. A wait <= 0 turns
// it off (the default).
func WithDurable(wait time.Duration) Option {
	return func(c *config) { c.durableWait = max(wait, 0) }
}
