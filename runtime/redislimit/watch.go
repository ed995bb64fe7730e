package redislimit

import (
	"time"
)

// A batched call's caller waits on its call's wake channel alone, not on a
// timer of its own and the breaker's channel, which every waiting caller
// would lock twice per decision. Instead the batcher wakes it: when its
// round trip ends, when the breaker opens (trip), and when its wait is due
// (the watch: one timer for every waiting call of the limiter, set for the
// earliest wait due). A woken caller judges its wait exactly as a timer
// would have it do, lateness included, since the watch's timer is as late
// as the process is paused. The watch also ends each round trip whose
// connect bound (see Limiter.connectBound) has passed.
type watch struct {
	// timer runs wakeDue; at (guarded by the batcher's mu) is when (mono)
	// it is set for, 0 when it is not.
	timer *time.Timer
	at    int64
}

// poke wakes c's caller, unless a wake is pending.
func poke(c *call) {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// watchFrom makes the watch wake the calls due at t, if it would not
// already run by then; b.mu is held.
func (b *batcher) watchFrom(t int64) {
	if b.watch.at != 0 && t >= b.watch.at {
		return
	}
	b.watch.at = t
	b.watch.timer.Reset(time.Duration(t - mono()))
}

// expect makes the watch wake c at t, the due time of its next wake.
func (b *batcher) expect(c *call, t int64) {
	c.due.Store(t)
	b.mu.Lock()
	b.watchFrom(t)
	b.mu.Unlock()
}

// wakeDue wakes every waiting call whose wait is due, ends the round trips
// whose connect bound passed, and sets the watch for the next of either.
func (b *batcher) wakeDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now, next := mono(), int64(0)
	b.each(func(c *call) {
		due := c.due.Load()
		if c.direct && due <= now {
			// Nobody waits on c's wake: the watch keeps its wait's
			// account instead (see batcher.decide).
			c.late.Store(max(c.late.Load(), now-due))
			due = now + c.period
			c.due.Store(due)
		}
		switch {
		case due <= now:
			poke(c)
		case next == 0 || due < next:
			next = due
		}
	})
	for _, batch := range b.flying {
		if len(batch) == 0 {
			continue
		}
		if at := batch[0].flight.expireBy(now); at != 0 && (next == 0 || at < next) {
			next = at
		}
	}
	b.watch.at = 0
	if next != 0 {
		b.watchFrom(next)
	}
}

// trip wakes every waiting call: the breaker opened.
func (b *batcher) trip() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.each(poke)
}

// each calls f for every call queued or under way whose caller waits;
// b.mu is held.
func (b *batcher) each(f func(*call)) {
	for _, c := range b.queue {
		if !c.abandoned {
			f(c)
		}
	}
	for _, batch := range b.flying {
		for _, c := range batch {
			if !c.abandoned && !c.finished.Load() {
				f(c)
			}
		}
	}
}
