package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// While Redis is healthy, every Limiter counts the limiters that share its
// prefix: each one stamps its own id in one sorted set every
// instanceBeat, on Redis's clock, and reads how many ids were stamped
// within instanceTTL. FailLocal's fallback then admits a share of each
// limit (see WithInstances), so that a fleet that loses Redis still admits
// about Max per window, not Max per instance.
const (
	instanceBeat    = 10 * time.Second
	instanceTTL     = 3 * instanceBeat
	instanceTimeout = 2 * time.Second
)

// instanceScript stamps ARGV[1] in KEYS[1] at Redis's time, forgets the
// ids older than ARGV[2] ms, and returns how many remain.
var instanceScript = redis.NewScript(instanceSrc)

// instanceSrc is instanceScript's source, to which a refusal inside it is
// traced (see scriptCommand).
const instanceSrc = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
`

// instances knows how many limiters share the store.
type instances struct {
	// fixed is WithInstances's n, or 0 to learn it.
	fixed int
	id    string
	key   string
	// n is the count last read from Redis; 0 until one is.
	n       atomic.Int64
	next    atomic.Int64 // when (mono) the next beat is due
	running atomic.Bool
	// logged is when (mono) noteUnknownShare last logged; 0 if never.
	logged atomic.Int64
	// onError, if set, is told of each error reply to a beat, so that
	// refusals are logged (see ErrPermission).
	onError func(error)
}

func newInstances(prefix string, fixed int) *instances {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &instances{fixed: fixed, id: hex.EncodeToString(b[:]), key: prefix + "instances"}
}

// count returns how many limiters share the store: WithInstances's n, else
// the count last read from Redis. known is false when neither is there yet
// (Redis never answered a beat, or refuses it), and then n is 0.
func (in *instances) count() (n int, known bool) {
	if in.fixed > 0 {
		return in.fixed, true
	}
	n = int(in.n.Load())
	return n, n > 0
}

// due stamps this limiter's id on its own goroutine when a beat is due.
func (in *instances) due(c redis.UniversalClient, now time.Time) {
	if in.fixed > 0 || monoOf(now) < in.next.Load() || !in.running.CompareAndSwap(false, true) {
		return
	}
	in.next.Store(monoOf(now) + int64(instanceBeat))
	go func() {
		defer in.running.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), instanceTimeout)
		defer cancel()
		n, err := instanceScript.Run(ctx, c, []string{in.key}, in.id, instanceTTL.Milliseconds()).Int64()
		var refused redis.Error
		switch {
		case errors.As(err, &refused):
			// Redis refuses the script (an ACL, say): the count stays as
			// last read, and the beat is not tried again before its time.
			if in.onError != nil {
				in.onError(err)
			}
			return
		case err != nil:
			// Redis did not answer; the breaker deals with that. The
			// count stays as last read, and the beat is tried again soon.
			in.next.Store(mono() + int64(instanceBeat/10))
			return
		}
		in.n.Store(n)
	}()
}

// ErrInstancesUnknown is in the Decisions.Cause of FailLocal's denials
// made because the limiter does not know how many limiters share the
// store, so that it cannot tell each limit's share: Redis failed before it
// answered a beat, or refuses the beat, and WithInstances was not given.
var ErrInstancesUnknown = errors.New("ratelimit: FailLocal denies: the number of instances sharing redis is unknown, so no share of the limit is known; give WithInstances(n) with n at least the fleet's size, or let redis run the instance beat")

// unknownShareLogEvery spaces the logs of FailLocal denying for want of an
// instance count: an operator must see it, but not once per call.
const unknownShareLogEvery = time.Minute

// noteUnknownShare logs, at most once per unknownShareLogEvery, that
// FailLocal denies l's calls because the instance count is unknown.
func (r *Limiter) noteUnknownShare(l runtime.Limit) {
	now := mono()
	last := r.peers.logged.Load()
	if last != 0 && now-last < int64(unknownShareLogEvery) || !r.peers.logged.CompareAndSwap(last, now) {
		return
	}
	r.logger().Error(ErrInstancesUnknown.Error(), slog.String("limit", l.Name))
}

// share returns l as FailLocal's fallback decides it among n limiters:
// Max, and Burst when set, divided by n, rounded down, and at least 1.
func share(l runtime.Limit, n int) runtime.Limit {
	if n <= 1 {
		return l
	}
	l.Max = max(1, l.Max/n)
	if l.Burst > 0 {
		l.Burst = max(1, l.Burst/n)
	}
	return l
}
