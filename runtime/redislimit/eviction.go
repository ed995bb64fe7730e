package redislimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// ErrEvictionRisk is matched (errors.Is) by the DegradedEvent.Err a
// Limiter reports, once per finding, when Redis may delete its keys to
// free memory: with a maxmemory limit and any maxmemory-policy but
// noeviction, an evicted key forgets its admissions and the limit admits
// again, without any error. It is also reported when the limiter cannot read
// the policy (CONFIG is often disabled on managed Redis).
var ErrEvictionRisk = errors.New("ratelimit: redis may evict rate-limit counts")

// How often the configuration is read again, and how long a read may take.
// It is also read at first use and whenever Redis answers after failing.
const (
	evictionCheckInterval = 5 * time.Minute
	evictionRetryInterval = 5 * time.Second
	evictionCheckTimeout  = 2 * time.Second
)

// evictionCheck reads the server settings that can make Redis forget counts,
// off the decision path, and reports each distinct finding once.
type evictionCheck struct {
	// periodic schedules the check.
	periodic

	mu       sync.Mutex
	reported string // the finding last reported; "" when all is well
}

// start makes the check that begin found due, on its own goroutine. l is
// the limit being decided, which the report names.
func (c *evictionCheck) start(r *Limiter, l runtime.Limit) {
	c.run(evictionRetryInterval, func() (answered bool) {
		ctx, cancel := context.WithTimeout(context.Background(), evictionCheckTimeout)
		defer cancel()
		finding, ok := evictionFinding(ctx, r.client)
		if !ok {
			// Redis did not answer; that is the breaker's business. Look
			// again soon rather than in minutes.
			return false
		}
		c.report(r, l, finding)
		return true
	})
}

// report logs and sends to OnDegraded a finding that differs from the last
// one reported.
func (c *evictionCheck) report(r *Limiter, l runtime.Limit, finding error) {
	msg := ""
	if finding != nil {
		msg = finding.Error()
	}
	c.mu.Lock()
	changed := msg != c.reported
	c.reported = msg
	c.mu.Unlock()
	if !changed || finding == nil {
		return
	}
	r.logger().Warn(msg, slog.String("limit", l.Name))
	if r.cfg.onDegraded != nil {
		r.cfg.onDegraded(DegradedEvent{Limit: l, Policy: r.cfg.policy, Err: finding})
	}
}

// evictionFinding reads maxmemory and maxmemory-policy from every primary
// and returns an error wrapping ErrEvictionRisk when any of them may evict
// keys or cannot be read, nil when none may. ok is false when Redis did not
// answer at all, so nothing can be said yet.
func evictionFinding(ctx context.Context, c redis.UniversalClient) (finding error, ok bool) {
	var (
		mu      sync.Mutex
		risky   []string
		denied  error
		failure error
	)
	check := func(ctx context.Context, node *redis.Client) error {
		cfg, err := node.ConfigGet(ctx, "maxmemory*").Result()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil && configRefused(err):
			denied = err
		case err != nil:
			failure = err
		case cfg["maxmemory"] != "0" && cfg["maxmemory-policy"] != "noeviction":
			risky = append(risky, fmt.Sprintf("%s has maxmemory-policy %s with maxmemory %s", node.Options().Addr, cfg["maxmemory-policy"], cfg["maxmemory"]))
		}
		return nil
	}
	switch c := c.(type) {
	case *redis.ClusterClient:
		_ = c.ForEachMaster(ctx, check)
	case *redis.Ring:
		_ = c.ForEachShard(ctx, check)
	case *redis.Client:
		_ = check(ctx, c)
	default:
		return fmt.Errorf("%w: cannot read maxmemory-policy through a %T; make sure every server runs with maxmemory-policy noeviction", ErrEvictionRisk, c), true
	}
	switch {
	case len(risky) > 0:
		slices.Sort(risky)
		return fmt.Errorf("%w: %s; an evicted key forgets its admissions and the limit admits again: set maxmemory-policy noeviction, or give the limiter a Redis of its own", ErrEvictionRisk, strings.Join(risky, ", ")), true
	case denied != nil:
		return fmt.Errorf("%w: cannot read maxmemory-policy (%v); make sure every server runs with maxmemory-policy noeviction", ErrEvictionRisk, denied), true
	case failure != nil:
		return nil, false
	}
	return nil, true
}
