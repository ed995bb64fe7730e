package memlimit

// tokenBucket is the in-memory twin of lua/token_bucket.lua. t is the level
// in units of 1/window token at time s; a zero value is a full bucket.
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
	v := verdict{remaining: t / p.window, reset: at - now + ceilDiv(capacity-t, p.max), scratch: t, count: at}
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
