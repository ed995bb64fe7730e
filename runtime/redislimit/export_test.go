package redislimit

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// algorithmOf returns l's algorithm, resolving the zero value.
func algorithmOf(l runtime.Limit) runtime.Algorithm {
	if l.Algorithm == "" {
		return runtime.SlidingLog
	}
	return l.Algorithm
}

// due starts a beat when one is due at now, as a decision does.
func (in *instances) due(c redis.UniversalClient, now time.Time) {
	if in.fixed == 0 && in.begin(monoOf(now), instanceBeat) {
		in.start(c)
	}
}

// settle waits for the lease script calls on their way.
func (t *leaseTable) settle() { t.asks.Wait() }

// joinLine asks once for a permit of the call of reqs as HoldWait does,
// keeping the places of l (nil: a new line), and returns the line.
func (r *Limiter) joinLine(reqs []runtime.Request, l *line) (runtime.Decisions, runtime.Hold, *line, error) {
	if l == nil {
		l = newLine(reqs)
	}
	ds, h, err := r.hold(context.Background(), reqs, l)
	return ds, h, l, err
}

// withCalendarClock makes the limiter compute calendar boundaries on now,
// as a client whose clock agrees with servers started with an offset.
func withCalendarClock(now func() time.Time) Option {
	return func(c *config) { c.calendarClock = now }
}

// withDurableReplicas makes a durable limiter wait for n replicas, whatever
// the server says: the fault suite's negative control.
func withDurableReplicas(n int) Option {
	return func(c *config) { c.durableReplicas = n }
}
