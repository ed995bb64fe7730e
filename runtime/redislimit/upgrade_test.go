package redislimit

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// ringScript is the sliding log of the releases that wrote every log as a
// ring with a header (testdata/sliding_log_ring.lua, lua/sliding_log.lua as
// of 70466c1).
func ringScript(t *testing.T) *redis.Script { return oldLogScript(t, "testdata/sliding_log_ring.lua") }

// oldLogScript assembles the sliding log of an earlier release, in file,
// with header.lua and main.lua.
func oldLogScript(t *testing.T, file string) *redis.Script {
	t.Helper()
	old, err := os.ReadFile(file)
	require.NoError(t, err)
	consts := luaConstants()
	var b strings.Builder
	for _, src := range []string{"header.lua", "", "main.lua"} {
		text := string(old)
		if src != "" {
			f, err := luaFiles.ReadFile("lua/" + src)
			require.NoError(t, err)
			text = string(f)
		}
		b.WriteString(luaConstName.ReplaceAllStringFunc(text, func(id string) string {
			if v, ok := consts[id]; ok {
				return v
			}
			return id
		}))
		b.WriteString("\n")
	}
	return redis.NewScript(b.String())
}

// zsetDecide decides a call of cost on skey with an earlier release's
// script s, at now on the callers' clock, and returns whether it was
// admitted.
func zsetDecide(t *testing.T, c *redis.Client, s *redis.Script, skey string, l runtime.Limit, now time.Time, cost int64) bool {
	t.Helper()
	reply, err := oldDecide(c, s, skey, l, now, cost)
	require.NoError(t, err)
	res, err := appendReply(nil, reply)
	require.NoError(t, err)
	require.Len(t, res, 6)
	return res[0] == 1
}

// oldDecide runs an earlier release's script s on a call of cost on skey,
// at now on the callers' clock, and returns its reply.
func oldDecide(c *redis.Client, s *redis.Script, skey string, l runtime.Limit, now time.Time, cost int64) (string, error) {
	var nums []byte
	for _, v := range []int64{now.UnixMicro(), 1, codeSlidingLog, l.Window.Microseconds(), int64(l.Max), int64(l.Max), cost} {
		nums = binary.LittleEndian.AppendUint64(nums, uint64(v))
	}
	return s.Run(ctx, c, []string{skey}, modeDecide, string(nums)).Text()
}

// TestSlidingLogUpgradeFromRing writes small logs with the script that kept
// them as rings with a header, as a running release leaves them, and
// decides on them with this one: every admission counts until it leaves
// the window, a denial with nothing to drop leaves the ring as it is, and
// the first admission rewrites it as a small log, keeping each admission's
// time. The earlier release, meeting a small log, fails with a script
// error before it writes anything (TestRingScriptFailsOnSmallLogs).
func TestSlidingLogUpgradeFromRing(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	old := ringScript(t)
	clock := newFakeClock()
	lim := New(c, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
	const max = 8
	l := runtime.Limit{Name: "Upgrade.Ring", Window: time.Minute, Max: max}
	skey := storageKeyOf(l, "k")
	t0 := clock.Now()
	var want []int64
	for _, call := range []struct {
		at   time.Duration
		cost int
	}{{0, 1}, {10 * time.Second, max - 5}, {20 * time.Second, 2}} {
		require.True(t, zsetDecide(t, c, old, skey, l, t0.Add(call.at), int64(call.cost)))
		for range call.cost {
			want = append(want, t0.Add(call.at).UnixMicro())
		}
	}
	v, err := c.Get(ctx, skey).Result()
	require.NoError(t, err)
	require.Len(t, v, logHeaderBytes+logEntryBytes*len(want), "the earlier release's ring")
	require.Equal(t, want, logEntries(t, v))

	// Denied, with the wait the oldest entry sets, and nothing written.
	clock.Advance(30 * time.Second)
	d, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: 3})
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Remaining: 2, RetryAfter: 30 * time.Second, ResetAfter: 50 * time.Second}, d.Each[0])
	after, err := c.Get(ctx, skey).Result()
	require.NoError(t, err)
	require.Equal(t, v, after, "a denial with nothing to drop writes nothing")

	// Admitted within what is left: a small log of the ring's entries, then
	// this call's.
	d, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: 2})
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Minute}, d.Each[0])
	v, err = c.Get(ctx, skey).Result()
	require.NoError(t, err)
	now := clock.Now().UnixMicro()
	require.Len(t, v, len(smallLogMark)+logEntryBytes*(len(want)+2), "a small log")
	require.Equal(t, append(want, now, now), logEntries(t, v))
	ttl, err := c.PTTL(ctx, skey).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Second)

	// The ring's first entry stops counting at t0+60s, its next three at
	// t0+70s.
	clock.Advance(30*time.Second - time.Microsecond)
	require.False(t, allow(t, lim, l, "k").Allowed)
	clock.Advance(time.Microsecond)
	require.True(t, allow(t, lim, l, "k").Allowed)
	require.False(t, allow(t, lim, l, "k").Allowed)
	clock.Advance(10 * time.Second)
	d, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: 3})
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.False(t, allow(t, lim, l, "k").Allowed)
}

// TestRingScriptFailsOnSmallLogs runs the script of the release that wrote
// every log as a ring on small logs this one wrote, as happens during a
// rolling upgrade: whatever the log's size, the call's cost, a Max that
// reads it whole or in place, and whether its entries stopped counting, the
// call fails with a script error (and the instance follows its failure
// policy) and the log is left as it was.
func TestRingScriptFailsOnSmallLogs(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	old := ringScript(t)
	clock := newFakeClock()
	lim := New(c, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
	for _, entries := range []int{1, 2, 4, 9, 100} {
		l := runtime.Limit{Name: fmt.Sprint("Upgrade.Mixed", entries), Window: time.Minute, Max: 100}
		skey := storageKeyOf(l, "k")
		for range entries {
			require.True(t, allow(t, lim, l, "k").Allowed)
			clock.Advance(time.Second / 2)
		}
		v, err := c.Get(ctx, skey).Result()
		require.NoError(t, err)
		require.Len(t, logEntries(t, v), entries)
		for _, at := range []time.Duration{0, 30 * time.Second, 2 * time.Minute} {
			for _, oldMax := range []int{1, 8, 100, 128, 129, 1000} {
				for _, cost := range []int64{1, int64(oldMax)} {
					oldLimit := l
					oldLimit.Max = oldMax
					_, err := oldDecide(c, old, skey, oldLimit, clock.Now().Add(at), cost)
					require.Error(t, err, "%d entries, %v later, old Max %d, cost %d", entries, at, oldMax, cost)
					after, err := c.Get(ctx, skey).Result()
					require.NoError(t, err)
					require.Equal(t, v, after, "%d entries, %v later, old Max %d, cost %d: the earlier release wrote", entries, at, oldMax, cost)
				}
			}
		}
	}
}
