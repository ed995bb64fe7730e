package memlimit

import "time"

// A shard sweeps its expired keys when calls reach it (see shard.tidy).
// Once calls stop, as when an outage that a Redis limiter's fallback decided
// ends, nothing would reach the keys they left. So while a limiter on its
// own clock holds keys, it looks at its shards once a second and sweeps
// those not swept for sweepInterval. A limiter on WithClock's clock does
// not: that clock may stand still or go back, and forgetting a key that a
// clock going back would count again changes decisions.
//
// The pending timer holds the limiter, so a limiter dropped with keys in it
// is collected once they have expired.

// idleSweepEvery is how often a limiter holding keys looks for idle shards.
const idleSweepEvery = time.Second

// keepTidy arms the idle sweep unless it is armed; a call that adds a key
// calls it.
func (m *Limiter) keepTidy() {
	if m.clock == nil && !m.idle.Load() && m.idle.CompareAndSwap(false, true) {
		time.AfterFunc(idleSweepEvery, m.idleSweep)
	}
}

// idleSweep sweeps the shards that no call swept lately, one shard at a
// time, and arms itself again while any key remains.
func (m *Limiter) idleSweep() {
	if m.sweepIdle() {
		time.AfterFunc(idleSweepEvery, m.idleSweep)
		return
	}
	m.idle.Store(false)
	// A key added after its shard was looked at saw the sweep armed.
	if m.Len() > 0 {
		m.keepTidy()
	}
}

// sweepIdle sweeps the shards whose timed sweep is due and reports whether
// any shard still holds keys.
func (m *Limiter) sweepIdle() (left bool) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		if now := m.now(); s.n > 0 && now >= s.nextSweep.Load() {
			s.sweep(now, nil)
		}
		left = left || s.n > 0
		s.mu.Unlock()
	}
	return left
}
