package redislimit

import "time"

// monoBase is where the limiter's own clock starts: the times of waits,
// the watch, round trips, the breaker and the periodic checks are ns since
// monoBase on the monotonic clock, which no step of the wall clock moves,
// and are added and compared as integers, which a decision does a dozen
// times.
var monoBase = time.Now()

// mono returns now on the monotonic clock.
func mono() int64 { return int64(time.Since(monoBase)) }

// monoOf returns t on the monotonic clock.
func monoOf(t time.Time) int64 { return int64(t.Sub(monoBase)) }

// timeOf returns the time of m, a time on the monotonic clock.
func timeOf(m int64) time.Time { return monoBase.Add(time.Duration(m)) }
