package memlimit

import "slices"

// swBuckets is the number of buckets per window; lua/sliding_window.lua
// must use the same. Buckets are ceil(Window/10) µs long, aligned to the
// Unix epoch, and a call is admitted if the current bucket and the 10
// before it, plus its cost, hold at most Max: those 11 buckets always
// cover the last Window, so no window holds more than Max, and admissions
// up to one bucket older than the window still count (SlidingWindow's
// early denials).
const swBuckets = 10

// slidingWindow is the in-memory twin of lua/sliding_window.lua: counts per
// bucket index, sorted by index. A commit's receipt (verdict.scratch) is
// the index of the bucket it counted in.
type slidingWindow struct {
	idx    []int64
	counts []int64
}

func (s *slidingWindow) check(now int64, p params) verdict {
	// Drop buckets that no longer count, and empty ones (refunds).
	oldest := floorDiv(now, ceilDiv(p.window, swBuckets)) - swBuckets
	k := 0
	for i, j := range s.idx {
		if j >= oldest && s.counts[i] > 0 {
			s.idx[k], s.counts[k] = j, s.counts[i]
			k++
		}
	}
	s.idx, s.counts = s.idx[:k], s.counts[:k]
	return s.look(now, p)
}

// look is check without dropping anything, for a peek: it skips the
// buckets check would drop.
func (s *slidingWindow) look(now int64, p params) verdict {
	b := ceilDiv(p.window, swBuckets)
	cur := floorDiv(now, b)
	oldest := cur - swBuckets
	counts := func(i int) bool { return s.idx[i] >= oldest && s.counts[i] > 0 }
	var count int64
	newest := int64(-1 << 63)
	for i := range s.idx {
		if counts(i) {
			count += s.counts[i]
			newest = s.idx[i]
		}
	}
	into := cur
	if count > 0 && newest > into {
		// Record in the newest bucket seen, so that a clock behind another
		// one never files an admission where it would stop counting early.
		into = newest
	}
	v := verdict{remaining: max(0, p.max-count), scratch: into, count: count}
	if count > 0 {
		v.reset = (newest+swBuckets+1)*b - now
	}
	if count+p.cost > p.max {
		need := count + p.cost - p.max
		for i, j := range s.idx {
			if !counts(i) {
				continue
			}
			need -= s.counts[i]
			if need <= 0 {
				// Bucket j stops counting when the current index passes j+10.
				v.retry = (j+swBuckets+1)*b - now
				break
			}
		}
		return v
	}
	v.ok = true
	return v
}

func (s *slidingWindow) commit(now int64, p params, v *verdict) {
	into := v.scratch
	if i, found := slices.BinarySearch(s.idx, into); found {
		s.counts[i] += p.cost
	} else {
		s.idx = slices.Insert(s.idx, i, into)
		s.counts = slices.Insert(s.counts, i, p.cost)
	}
	v.remaining = p.max - v.count - p.cost
	v.reset = (into+swBuckets+1)*ceilDiv(p.window, swBuckets) - now
}

// giveBack takes d units back from bucket receipt, never below 0, if it
// still counts at now.
func (s *slidingWindow) giveBack(now int64, p params, receipt, d int64) {
	if receipt < floorDiv(now, ceilDiv(p.window, swBuckets))-swBuckets {
		return
	}
	if i, found := slices.BinarySearch(s.idx, receipt); found {
		s.counts[i] = max(0, s.counts[i]-d)
	}
}
