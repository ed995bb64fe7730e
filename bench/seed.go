package bench

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// seedLua is the article's sliding-log script, byte for byte (comments
// included, so that its SHA and its cost are the ones its readers deploy).
//
//go:embed seed_sliding_window.lua
var seedLua string

var seedScript = redis.NewScript(seedLua)

// seedLimiter is the article's Java tryAcquire translated line by line: the
// caller's clock in milliseconds, a member of that timestamp, "-" and a
// random UUID, every argument sent as a string, EVALSHA falling back to EVAL
// on NOSCRIPT (what RedisTemplate.execute does with a DefaultRedisScript).
type seedLimiter struct {
	client redis.Scripter
	now    func() time.Time
}

func (s seedLimiter) tryAcquire(ctx context.Context, key string, limit int, windowMillis int64) (bool, error) {
	now := strconv.FormatInt(s.now().UnixMilli(), 10)
	member := now + "-" + uuid.NewString()
	res, err := seedScript.Run(ctx, s.client, []string{key},
		strconv.FormatInt(windowMillis, 10), strconv.Itoa(limit), now, member).Result()
	if err != nil {
		return false, fmt.Errorf("seed script on %q: %w", key, err)
	}
	// Java compares String.valueOf(result) with "1"; a type assertion is
	// the Go equivalent without the string allocation.
	n, ok := res.(int64)
	if !ok {
		return false, fmt.Errorf("seed script on %q: unexpected reply %v (%T)", key, res, res)
	}
	return n == 1, nil
}
