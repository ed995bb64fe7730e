package runtime

import "time"

// slidingLog is the in-memory twin of lua/sliding_log.lua; the two must make
// identical decisions. times holds the admissions in force, in µs, strictly
// increasing, from times[head] on.
type slidingLog struct {
	times []int64
	head  int
}

func (s *slidingLog) len() int       { return len(s.times) - s.head }
func (s *slidingLog) at(i int) int64 { return s.times[s.head+i] }
func (s *slidingLog) newest() int64  { return s.times[len(s.times)-1] }

func (s *slidingLog) check(now int64, p params) verdict {
	// Drop admissions at or before now-window: the window is (now-window, now].
	for s.head < len(s.times) && s.times[s.head] <= now-p.window {
		s.head++
	}
	if s.head == len(s.times) {
		s.times, s.head = s.times[:0], 0
	} else if s.head > len(s.times)/2 {
		s.times = append(s.times[:0], s.times[s.head:]...)
		s.head = 0
	}

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
		// Keep times strictly increasing, as the Redis log needs unique
		// members; recording later can only delay expiry, never advance it.
		t = s.newest() + 1
	}
	count := int64(s.len())
	for i := int64(0); i < p.cost; i++ {
		s.times = append(s.times, t+i)
	}
	v.remaining = p.max - count - p.cost
	v.reset = s.newest() + p.window - now
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
