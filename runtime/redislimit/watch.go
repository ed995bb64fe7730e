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
// as the process is paused.
type watch struct {
	// timer runs wakeDue; at (guarded by the batcher's mu) is when it is
	// set for, zero when it is not.
	timer *time.Timer
	at    time.Time
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
func (b *batcher) watchFrom(t time.Time) {
	if !b.watch.at.IsZero() && !t.Before(b.watch.at) {
		return
	}
	b.watch.at = t
	b.watch.timer.Reset(time.Until(t))
}

// expect makes the watch wake c at t, the due time of its next wake.
func (b *batcher) expect(c *call, t time.Time) {
	c.due.Store(t.UnixNano())
	b.mu.Lock()
	b.watchFrom(t)
	b.mu.Unlock()
}

// wakeDue wakes every waiting call whose wait is due, and sets the watch
// for the next.
func (b *batcher) wakeDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now().UnixNano()
	next := int64(0)
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
	b.watch.at = time.Time{}
	if next != 0 {
		b.watchFrom(time.Unix(0, next))
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
