package redislimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestSlidingLogKeepsLaterEntrysLife puts in a log an admission later than
// the server's clock, as after the clock stepped back, and makes a call.
// The key must live until that entry leaves the window: a life counted from
// the call's own time would forget an admission that still counts.
func TestSlidingLogKeepsLaterEntrysLife(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	ctx := context.Background()
	lim := New(c)
	l := runtime.Limit{Name: "Later.Entry", Window: time.Second, Max: 10}
	skey := storageKeyOf(l, "someone@example.com")

	d, err := lim.Allow(ctx, l, "someone@example.com")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	now, err := c.Time(ctx).Result()
	require.NoError(t, err)
	later := now.Add(30 * time.Second).UnixMicro()
	v, err := c.Get(ctx, skey).Result()
	require.NoError(t, err)
	require.NoError(t, c.Set(ctx, skey, smallLogOf(append(logEntries(t, v), later)...), 31*time.Second).Err())

	d, err = lim.Allow(ctx, l, "someone@example.com")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, 7, d.Remaining, "three entries count: the first call's, the later one and this call's")
	ttl, err := c.PTTL(ctx, skey).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 20*time.Second, "the key must outlive the later entry's window")
}

// TestSmallLogLifetime walks a small log's admissions through quarters of
// its window and checks after each that the key lives until its newest
// entry leaves the window, and no more than a quarter window longer: an
// admission in the newest entry's quarter appends without PEXPIRE, and
// the lifetime set earlier must still cover it. The clock is the test's,
// so Redis's TTLs do not run down with it: the key's end, in the test's
// time, is the time of the call that last set its lifetime (PEXPIRE or
// SET) plus the PTTL read then, less the 1s WithClock adds. Redis's own
// clock moves meanwhile by the test's few milliseconds, which slack
// covers, where a lifetime short by part of a quarter window is seconds
// short.
func TestSmallLogLifetime(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	clock := newFakeClock()
	lim := New(c, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0), WithInstances(1))
	l := runtime.Limit{Name: "Small.Lifetime", Window: time.Minute, Max: 100}
	skey := storageKeyOf(l, "k")
	const pad, slack = time.Second, 500 * time.Millisecond
	var ends time.Time
	var kept, renewed int
	for i := range 200 {
		// Steps of 0 to 1.5s: about 80 entries count, one or two stop
		// counting at each call, and some appends cross a 15s quarter.
		clock.Advance(time.Duration(i*7919%1500) * time.Millisecond)
		before := commandStat(t, c, "pexpire", "calls") + commandStat(t, c, "set", "calls")
		require.True(t, allow(t, lim, l, "k").Allowed, "call %d", i)
		v, err := c.Get(ctx, skey).Result()
		require.NoError(t, err)
		require.Zero(t, len(v)%logEntryBytes, "call %d: a small log", i)
		entries := logEntries(t, v)
		newest := time.UnixMicro(entries[len(entries)-1])
		if commandStat(t, c, "pexpire", "calls")+commandStat(t, c, "set", "calls") == before {
			kept++
		} else {
			renewed++
			ttl, err := c.PTTL(ctx, skey).Result()
			require.NoError(t, err)
			ends = clock.Now().Add(ttl - pad)
			require.False(t, ends.After(newest.Add(l.Window+l.Window/4+time.Millisecond)), "call %d: the key outlives its newest entry by %v", i, ends.Sub(newest))
		}
		require.False(t, ends.Add(slack).Before(newest.Add(l.Window)), "call %d: the key ends %v before its newest entry stops counting", i, newest.Add(l.Window).Sub(ends))
	}
	require.NotZero(t, kept, "some appends kept the lifetime as it was")
	require.NotZero(t, renewed, "some admissions renewed it")
	t.Logf("%d admissions kept the key's lifetime, %d renewed it", kept, renewed)
}

// TestSlidingLogLayoutFollowsEntries checks that a log's layout is chosen by
// what it holds, whatever its Max: up to smallLogEntries entries it is a
// small log, decided as one of Max 100 is (one read, one write: GETRANGE of
// its first bytes, and SETRANGE at its end), beyond that a ring, with room
// to grow, and a small log again at the first admission that leaves few
// enough. The differential and model tests check the decisions; this one
// checks what they cost.
func TestSlidingLogLayoutFollowsEntries(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	for _, max := range []int{129, 1000, runtime.MaxSlidingLog} {
		t.Run(fmt.Sprint("Max ", max), func(t *testing.T) {
			clock := newFakeClock()
			// A fixed count of instances: no beat, whose PEXPIRE would
			// count among a decision's commands whenever it ran.
			lim := New(c, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0), WithInstances(1))
			l := runtime.Limit{Name: fmt.Sprint("Layout.", max), Window: time.Hour, Max: max}
			skey := storageKeyOf(l, "k")
			cmds := []string{"get", "getrange", "set", "setrange", "pexpire", "del"}
			stats := func() []int {
				n := make([]int, len(cmds))
				for i, cmd := range cmds {
					n[i] = commandStat(t, c, cmd, "calls")
				}
				return n
			}
			small := func(n int) {
				t.Helper()
				v, err := c.Get(ctx, skey).Result()
				require.NoError(t, err)
				require.Equal(t, smallLogMark, v[:len(smallLogMark)], "a small log")
				require.Len(t, logEntries(t, v), n)
			}
			// A new key, then appends within one quarter of the window.
			require.True(t, allow(t, lim, l, "k").Allowed)
			small(1)
			for i := 2; i <= smallLogEntries; i++ {
				clock.Advance(time.Millisecond)
				before := stats()
				require.True(t, allow(t, lim, l, "k").Allowed)
				ran := stats()
				for j := range ran {
					ran[j] -= before[j]
				}
				require.Equal(t, []int{0, 1, 0, 1, 0, 0}, ran, "admission %d: %v of a small log's append", i, cmds)
			}
			small(smallLogEntries)

			// One more: a ring, with room for as many again, up to Max.
			clock.Advance(time.Millisecond)
			require.True(t, allow(t, lim, l, "k").Allowed)
			v, err := c.Get(ctx, skey).Result()
			require.NoError(t, err)
			h := logHeaderOf(v)
			require.Equal(t, smallLogEntries+1, h.n, "a ring of every entry")
			require.Equal(t, min(max, 2*smallLogEntries), h.cap)
			require.Len(t, logEntries(t, v), smallLogEntries+1)

			// Once all but ten stopped counting, the next admission
			// leaves eleven entries: a small log again.
			clock.Advance(l.Window - 10*time.Millisecond)
			require.True(t, allow(t, lim, l, "k").Allowed)
			small(11)
		})
	}
}
