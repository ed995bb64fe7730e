package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
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
	n atomic.Int64
	// periodic schedules the beat.
	periodic
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

// start makes the beat that begin found due: it stamps this limiter's
// id, on its own goroutine.
func (in *instances) start(c redis.UniversalClient) {
	in.run(instanceBeat/10, func() (answered bool) {
		ctx, cancel := context.WithTimeout(context.Background(), instanceTimeout)
		defer cancel()
		n, err := instanceScript.Run(ctx, c, []string{in.key}, in.id, instanceTTL.Milliseconds()).Int64()
		switch {
		case isRedisError(err):
			// Redis refuses the script (an ACL, say): the count stays as
			// last read, and the beat is not tried again before its time.
			if in.onError != nil {
				in.onError(err)
			}
			return true
		case err != nil:
			// Redis did not answer; the breaker deals with that. The
			// count stays as last read, and the beat is tried again soon.
			return false
		}
		in.n.Store(n)
		return true
	})
}
