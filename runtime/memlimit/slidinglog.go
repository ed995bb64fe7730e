package memlimit

import "slices"

// slidingLog is the in-memory twin of lua/sliding_log.lua; the two must make
// identical decisions. times holds the admissions in force, in µs, from
// times[head] on, never decreasing: each unit of a call at the call's time,
// which is later than every entry before it. Its capacity grows by doubling
// up to the largest Max it is called with, so a log takes at most about
// Max×8 bytes.
//
// Like the script, an admission in the quarter window of the newest entry
// keeps up to three admissions that stopped counting in front of the
// others, while one still counts and the log has room for them within Max
// and within a small log's smallLogEntries, and check drops them again at the next denial (or
// admission that does not keep them): if the clock steps back meanwhile,
// they count again, toward denial. dropped is how many the last check
// dropped, for commit to keep. A commit's receipt (verdict.scratch) is
// the time it recorded its units at.
type slidingLog struct {
	times []int64
	// head and dropped are int32 (Max is at most MaxSlidingLog), so that
	// an entry stays in its allocation class.
	head, dropped int32
}

// smallLogEntries is the most entries the script writes as a small log
// (SL_SMALL in lua/sliding_log.lua), the only layout that keeps them.
const smallLogEntries = 128

func (s *slidingLog) len() int       { return len(s.times) - int(s.head) }
func (s *slidingLog) at(i int) int64 { return s.times[int(s.head)+i] }
func (s *slidingLog) newest() int64  { return s.times[len(s.times)-1] }

func (s *slidingLog) check(now int64, p params) verdict {
	// Drop admissions at or before now-window: the window is (now-window, now].
	from := s.head
	for int(s.head) < len(s.times) && s.times[s.head] <= now-p.window {
		s.head++
	}
	s.dropped = s.head - from

	count := int64(s.len())
	v := verdict{remaining: max(0, p.max-count)}
	if count > 0 {
		v.reset = s.newest() + p.window - now
	}
	if count+p.cost > p.max {
		// Room for this call appears when the (count+cost-max)-th oldest
		// admission expires.
		v.retry = s.at(int(count+p.cost-p.max-1)) + p.window - now
		return v
	}
	v.ok = true
	return v
}

func (s *slidingLog) commit(now int64, p params, v *verdict) {
	t := now
	if s.len() > 0 && s.newest() >= t {
		// Later than every entry, as in the script, whose receipts are
		// the calls' times; recording later only delays expiry.
		t = s.newest() + 1
	}
	live, cost := s.len(), int(p.cost)
	if kept := live + int(s.dropped) + cost; live > 0 && s.dropped <= 3 && int64(kept) <= p.max &&
		kept <= smallLogEntries && sameQuarter(s.newest(), t, p.window) {
		s.head -= s.dropped
	}
	if int(s.head) == len(s.times) {
		s.times, s.head = s.times[:0], 0
	}
	count := s.len()
	if len(s.times)+cost > cap(s.times) {
		times := s.times[:0]
		if count+cost > cap(s.times) {
			// count+cost is at most Max, as check admitted the call.
			times = slices.Grow([]int64(nil), max(count+cost, min(2*cap(s.times), int(p.max))))
		}
		s.times, s.head = append(times, s.times[s.head:]...), 0
	}
	for range cost {
		s.times = append(s.times, t)
	}
	v.remaining = p.max - int64(live) - p.cost
	v.reset = t + p.window - now
	v.scratch = t
}

// giveBack takes back up to d of the units recorded at receipt, if they
// still count at now. Only the call whose receipt it is recorded at that
// time (see commit), so they are its own.
func (s *slidingLog) giveBack(now int64, p params, receipt, d int64) {
	if receipt <= now-p.window {
		return
	}
	live := s.times[s.head:]
	lo, found := slices.BinarySearch(live, receipt)
	if !found {
		return
	}
	hi := lo
	for hi < len(live) && live[hi] == receipt && int64(hi-lo) < d {
		hi++
	}
	s.times = slices.Delete(s.times, int(s.head)+lo, int(s.head)+hi)
}

// sameQuarter reports whether a and b fall in one quarter of a window of w
// µs (quarters of floor(w/4) µs, at least 1, from the epoch on).
func sameQuarter(a, b, w int64) bool {
	g := max(1, w/4)
	return a-mod(a, g) == b-mod(b, g)
}

// mod is a modulo b for b > 0, never negative, as Lua's % is.
func mod(a, b int64) int64 { return (a%b + b) % b }
