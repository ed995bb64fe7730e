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

// zsetScript is the sliding log of the releases that kept it as a sorted
// set (testdata/sliding_log_zset.lua, lua/sliding_log.lua as of a492dd3),
// assembled with header.lua and main.lua, which still speak its protocol.
func zsetScript(t *testing.T) *redis.Script {
	t.Helper()
	old, err := os.ReadFile("testdata/sliding_log_zset.lua")
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

// zsetDecide decides a call of cost on skey with the sorted-set script, at
// now on the callers' clock, and returns whether it was admitted.
func zsetDecide(t *testing.T, c *redis.Client, s *redis.Script, skey string, l runtime.Limit, now time.Time, cost int64) bool {
	t.Helper()
	var nums []byte
	for _, v := range []int64{now.UnixMicro(), 1, codeSlidingLog, l.Window.Microseconds(), int64(l.Max), int64(l.Max), cost} {
		nums = binary.LittleEndian.AppendUint64(nums, uint64(v))
	}
	reply, err := s.Run(ctx, c, []string{skey}, modeDecide, string(nums)).Text()
	require.NoError(t, err)
	res, err := appendReply(nil, reply)
	require.NoError(t, err)
	require.Len(t, res, 6)
	return res[0] == 1
}

// TestSlidingLogUpgrade writes logs with the sorted-set script, as a
// running release leaves them, and decides on them with this one: every
// admission of the sorted set counts until it leaves the window, a denial
// leaves the sorted set in place (and drops what stopped counting, as the
// old script did), and the first admission replaces it with the ring,
// keeping each admission's time. Max 8 and Max 200 take the two ways the
// script reads a log.
func TestSlidingLogUpgrade(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	old := zsetScript(t)
	for _, max := range []int{8, 200} {
		t.Run(fmt.Sprint("Max ", max), func(t *testing.T) {
			clock := newFakeClock()
			lim := New(c, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
			l := runtime.Limit{Name: fmt.Sprint("Upgrade.Log", max), Window: time.Minute, Max: max}
			skey := storageKeyOf(l, "k")
			t0 := clock.Now()
			// The sorted set's units of one call sit 1µs apart: 1 unit at
			// t0, max-5 at t0+10s, 2 at t0+20s.
			var want []int64
			for _, call := range []struct {
				at   time.Duration
				cost int
			}{{0, 1}, {10 * time.Second, max - 5}, {20 * time.Second, 2}} {
				require.True(t, zsetDecide(t, c, old, skey, l, t0.Add(call.at), int64(call.cost)))
				for i := range call.cost {
					want = append(want, t0.Add(call.at).UnixMicro()+int64(i))
				}
			}
			require.Equal(t, "zset", c.Type(ctx, skey).Val())

			// Denied, with the wait the sorted set's oldest unit sets.
			clock.Advance(30 * time.Second)
			d, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: 3})
			require.NoError(t, err)
			require.Equal(t, runtime.Decision{Remaining: 2, RetryAfter: 30 * time.Second, ResetAfter: 50*time.Second + time.Microsecond}, d.Each[0])
			require.Equal(t, "zset", c.Type(ctx, skey).Val(), "a denial writes no ring")

			// Admitted within what is left: the ring holds the sorted set's
			// units at their times, then this call's.
			d, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: 2})
			require.NoError(t, err)
			require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Minute}, d.Each[0])
			require.Equal(t, "string", c.Type(ctx, skey).Val())
			v, err := c.Get(ctx, skey).Result()
			require.NoError(t, err)
			now := clock.Now().UnixMicro()
			require.Equal(t, append(want, now, now), logEntries(t, v))
			ttl, err := c.PTTL(ctx, skey).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, 59*time.Second)

			// The sorted set's oldest unit stops counting at t0+60s, and its
			// units at t0+10s 1µs apart from t0+70s.
			clock.Advance(30*time.Second - time.Microsecond)
			require.False(t, allow(t, lim, l, "k").Allowed)
			clock.Advance(time.Microsecond)
			require.True(t, allow(t, lim, l, "k").Allowed)
			require.False(t, allow(t, lim, l, "k").Allowed)
			clock.Advance(10 * time.Second)
			d, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: int64(max - 5)})
			require.NoError(t, err)
			require.Equal(t, runtime.Decision{Remaining: 1, RetryAfter: time.Duration(max-6) * time.Microsecond, ResetAfter: 50 * time.Second}, d.Each[0])
			clock.Advance(time.Duration(max-6) * time.Microsecond)
			d, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: int64(max - 5)})
			require.NoError(t, err)
			require.True(t, d.Allowed)

			// A sorted set only denied in stops counting with its units.
			other := storageKeyOf(l, "full")
			require.True(t, zsetDecide(t, c, old, other, l, clock.Now(), int64(max)))
			for range 3 {
				d := allow(t, lim, l, "full")
				require.False(t, d.Allowed)
				require.Equal(t, time.Minute, d.RetryAfter)
			}
			require.Equal(t, int64(max), c.ZCard(ctx, other).Val())
			// Its first unit stops counting after the window, the others
			// 1µs apart.
			clock.Advance(time.Minute)
			require.True(t, allow(t, lim, l, "full").Allowed)
			require.Equal(t, int64(max), logLen(t, c, other), "the unit that stopped counting is not carried into the ring")
			require.False(t, allow(t, lim, l, "full").Allowed)
		})
	}
}
