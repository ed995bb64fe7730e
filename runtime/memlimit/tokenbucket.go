package memlimit

// tokenBucket is the in-memory twin of lua/token_bucket.lua. t is the level
// in units of 1/window token at time s; a zero value is a full bucket. A
// settlement that charges more than a call reserved may leave t below
// zero: calls then wait until it has refilled to their cost.
type tokenBucket struct {
	t, s int64
	set  bool
}

// level returns the level at now and the time it refers to, which never
// moves backwards.
func (b *tokenBucket) level(now int64, p params) (t, at int64) {
	capacity := p.burst * p.window
	switch {
	case !b.set:
		return capacity, now
	case now <= b.s:
		return b.t, b.s
	case now-b.s >= ceilDiv(capacity-b.t, p.max):
		return capacity, now
	}
	return b.t + (now-b.s)*p.max, now
}

func (b *tokenBucket) check(now int64, p params) verdict {
	capacity := p.burst * p.window
	t, at := b.level(now, p)
	need := p.cost * p.window
	// A level below zero (see giveBack's twin, settling a charge) leaves
	// nothing; at or above it, t / window is the script's floor.
	v := verdict{remaining: max(0, t/p.window), reset: at - now + ceilDiv(capacity-t, p.max), scratch: t, count: at}
	if t < need {
		v.retry = at - now + ceilDiv(need-t, p.max)
		return v
	}
	v.ok = true
	return v
}

func (b *tokenBucket) commit(now int64, p params, v *verdict) {
	capacity := p.burst * p.window
	t := v.scratch - p.cost*p.window
	b.t, b.s, b.set = t, v.count, true
	// t / window, as the script computes it, is check's level / window
	// less cost: the level was at least cost*window, so taking whole
	// tokens away leaves the same remainder. One division fewer.
	v.remaining -= p.cost
	v.reset = b.s - now + ceilDiv(capacity-t, p.max)
}

// giveBack puts d tokens back in the bucket as it was last written, up to
// Burst, as the script's refund does; a bucket never written is full.
func (b *tokenBucket) giveBack(p params, d int64) {
	if b.set {
		b.t = min(p.burst*p.window, b.t+d*p.window)
	}
}
