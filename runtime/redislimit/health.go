package redislimit

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

// Redis's health as the limiter sees it: the breaker, which stops asking
// Redis for the retry interval after a failure; the liveness check, which
// tells a wait that Redis left unanswered from an outage; and when Redis
// last answered. What an error says about Redis is errors.go's.

// breaker remembers a recent Redis failure so that, during an outage,
// callers get a degraded decision at once instead of each waiting for the
// timeout. After the retry interval exactly one caller probes Redis.
type breaker struct {
	interval time.Duration
	// openUntil is when (mono) Redis may be asked again; 0 when
	// Redis is healthy.
	openUntil atomic.Int64
	probing   atomic.Bool
	// tripped is closed when the breaker opens, so that the callers
	// already waiting for Redis stop waiting too; nil until someone waits.
	// onTrip, if set, is called then too, for the callers that do not
	// wait on tripped.
	tripped atomic.Pointer[chan struct{}]
	onTrip  func()
	// refused is the error of the decisions it degrades while a refusal,
	// or replicas that did not acknowledge (see ErrNotReplicated), keep it
	// open; nil otherwise.
	refused atomic.Pointer[circuitOpenError]
}

// openErr returns the error of a decision that the open breaker degrades.
func (b *breaker) openErr() error {
	if e := b.refused.Load(); e != nil {
		return e
	}
	return ErrCircuitOpen
}

// allow reports whether this call may ask Redis, and whether it is the
// probe, which must end with record or release.
func (b *breaker) allow(now time.Time) (send, probe bool) {
	until := b.openUntil.Load()
	if until == 0 {
		return true, false
	}
	if monoOf(now) < until || !b.probing.CompareAndSwap(false, true) {
		return false, false
	}
	return true, true
}

// isOpen reports whether the breaker stops calls from asking Redis at now,
// without making any of them the probe.
func (b *breaker) isOpen(now time.Time) bool {
	until := b.openUntil.Load()
	return until != 0 && monoOf(now) < until
}

// opened returns a channel that is closed when the breaker next opens.
func (b *breaker) opened() <-chan struct{} {
	for {
		if ch := b.tripped.Load(); ch != nil {
			return *ch
		}
		ch := make(chan struct{})
		if b.tripped.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// record notes the outcome of a call that asked Redis, and reports whether
// it closed the breaker: Redis answered after a failure. cause is the
// failure's error.
func (b *breaker) record(now time.Time, failed, probe bool, cause error) (recovered bool) {
	if failed {
		if errors.Is(cause, ErrPermission) || errors.Is(cause, ErrNotReplicated) {
			b.refused.Store(&circuitOpenError{cause: cause})
		} else {
			b.refused.Store(nil)
		}
		b.openUntil.Store(monoOf(now) + int64(b.interval))
		if ch := b.tripped.Swap(nil); ch != nil {
			close(*ch)
		}
		if b.onTrip != nil {
			b.onTrip()
		}
	} else if b.openUntil.Load() != 0 {
		recovered = b.openUntil.Swap(0) != 0
		b.refused.Store(nil)
	}
	b.release(probe)
	return recovered
}

// release ends a call that asked Redis but learnt nothing about it, such as
// one its caller cancelled.
func (b *breaker) release(probe bool) {
	if probe {
		b.probing.Store(false)
	}
}

// noteAnswer records that Redis answered a round trip sent at sent: with
// a reply, or with an error of its own.
func (r *Limiter) noteAnswer(sent time.Time, err error) {
	if err != nil && !isRedisError(err) && !errors.Is(err, ErrNotReplicated) {
		return
	}
	if err == nil && r.lanes != nil && !r.lanes.known.Load() {
		// The client has mapped its nodes to have an answer.
		r.lanes.known.Store(true)
	}
	t := monoOf(sent)
	for {
		old := r.answered.Load()
		if old >= t || r.answered.CompareAndSwap(old, t) {
			return
		}
	}
}

// checkLiveness asks Redis for something cheap on the node that holds
// key, unless a liveness check is running, and opens the breaker if Redis
// answers neither within budget nor with a reply: a check of Redis itself,
// after a wait that Redis left unanswered. A check that this process's own
// pause cut short proves nothing and is made again, up to maxStallFactor
// times.
func (r *Limiter) checkLiveness(key string, budget time.Duration) {
	if !r.checking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer r.checking.Store(false)
		for range maxStallFactor {
			switch err := r.checkLivenessOnce(key, budget); {
			case errors.Is(err, ErrCircuitOpen):
				return
			case isPaused(err):
				continue
			case err != nil && tripsBreaker(err):
				r.breaker.record(time.Now(), true, false, r.refused(err))
				r.reloadTopology()
			}
			return
		}
	}()
}

// checkLivenessOnce runs one liveness check: nil when Redis answered with
// a reply.
func (r *Limiter) checkLivenessOnce(key string, budget time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var w wait
	r.startWait(ctx, &w)
	_, err := r.exchange(ctx, &w, func(ctx context.Context) ([]int64, error) {
		return nil, r.client.Do(ctx, "pttl", key).Err()
	})
	return err
}

// reloadTopology makes a cluster client re-read the slot map after a
// failure. go-redis reloads it on MOVED or ASK, or once a minute, but not
// when a crashed master refuses connections; without this the limiter
// would stay degraded for up to a minute after a replica took over.
func (r *Limiter) reloadTopology() {
	if c, ok := r.client.(interface{ ReloadState(context.Context) }); ok {
		c.ReloadState(context.Background())
	}
}

// succeeded records that Redis decided a call sent at start, which probe
// says was the breaker's probe.
func (r *Limiter) succeeded(start time.Time, probe bool) {
	if r.breaker.record(start, false, probe, nil) {
		// Redis is back: check its configuration again, it may be a
		// different server now.
		r.settings.reset()
	}
}

// failed records that Redis did not decide a call of limit on key, with
// err, and returns the cause the failure policy reports. The breaker opens
// only on evidence about Redis: an error about the whole server, or a
// silence that a check of Redis itself confirms (see errSilent.evidence).
func (r *Limiter) failed(err error, probe bool, key, limit string) error {
	var silent *errSilent
	switch {
	case errors.Is(err, ErrCircuitOpen):
		r.breaker.release(probe)
		return r.breaker.openErr()
	case errors.As(err, &silent) && !silent.evidence(probe):
		r.breaker.release(probe)
		r.checkLiveness(key, silent.w.budget)
		return err
	}
	err = r.refused(err, slog.String("limit", limit))
	trip := tripsBreaker(err)
	r.breaker.record(time.Now(), trip, probe, err)
	if trip {
		r.reloadTopology()
	}
	return err
}
