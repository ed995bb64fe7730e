package runtime

import "time"

// slidingLog is the in-memory form of the sliding-log algorithm that
// lua/sliding_log.lua runs in Redis; the two must make identical decisions.
// times holds the admissions in force, in µs, strictly increasing, from
// times[head] on.
type slidingLog struct {
	times []int64
	head  int
}

func (s *slidingLog) len() int       { return len(s.times) - s.head }
func (s *slidingLog) at(i int) int64 { return s.times[s.head+i] }
func (s *slidingLog) newest() int64  { return s.times[len(s.times)-1] }

// decide applies one call of cost n at time now (µs) to a window of window µs
// holding at most max admissions.
func (s *slidingLog) decide(now, window int64, max, n int) Decision {
	// Drop admissions at or before now-window: the window is (now-window, now].
	for s.head < len(s.times) && s.times[s.head] <= now-window {
		s.head++
	}
	if s.head == len(s.times) {
		s.times, s.head = s.times[:0], 0
	} else if s.head > len(s.times)/2 {
		s.times = append(s.times[:0], s.times[s.head:]...)
		s.head = 0
	}

	count := s.len()
	if count+n > max {
		// Room for n appears when the (count+n-max)-th oldest admission expires.
		edge := s.at(count + n - max - 1)
		return Decision{
			Remaining:  maxInt(0, max-count),
			RetryAfter: micros(edge + window - now),
			ResetAfter: micros(s.newest() + window - now),
		}
	}
	t := now
	if count > 0 && s.newest() >= t {
		// Keep times strictly increasing, as the Redis log needs unique
		// members; recording later can only delay expiry, never advance it.
		t = s.newest() + 1
	}
	for i := 0; i < n; i++ {
		s.times = append(s.times, t+int64(i))
	}
	return Decision{
		Allowed:    true,
		Remaining:  max - count - n,
		ResetAfter: micros(s.newest() + window - now),
	}
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
