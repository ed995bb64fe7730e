package redislimit

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// isRefund matches the script calls that refund earlier admissions, as the
// proxy sees them: EVALSHA or EVAL, the script, the key count, the keys,
// then the mode.
func isRefund(args []string) bool {
	if len(args) < 4 || (!strings.EqualFold(args[0], "evalsha") && !strings.EqualFold(args[0], "eval")) {
		return false
	}
	n, err := strconv.Atoi(args[2])
	if err != nil || 3+n >= len(args) {
		return false
	}
	return args[3+n] == "s"
}

// keysInTagOrder returns two keys whose hash tags sort first and second, so
// that a limiter on a Ring decides a limit on the first before one on the
// second.
func keysInTagOrder() (first, second string) {
	first, second = "first", "second"
	for i := 0; string(appendTag(nil, first)) > string(appendTag(nil, second)); i++ {
		second = "second" + strconv.Itoa(i)
	}
	return first, second
}

// TestRefundsApplyOnce runs several-limit calls on a Redis Ring, where
// limits on different keys are decided one hash tag after another and an
// earlier tag's admission is refunded when a later one denies. A proxy
// between the client and a real server drops the reply of every refund after
// the server ran it, so go-redis resends the refund. A refund applied twice
// gives back room that was never taken, and the limit then admits more than
// Max; it must apply exactly once, so the limit admits exactly Max.
func TestRefundsApplyOnce(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": proxy.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	ctx := context.Background()
	first, second := keysInTagOrder()

	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			// One instant: every call falls in one window, whatever the
			// algorithm, so the audit below is exact.
			clock := newFakeClock()
			lim := New(ring, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
			wide := runtime.Limit{Name: "refund.wide." + string(algo), Window: time.Hour, Max: 5, Algorithm: algo}
			full := runtime.Limit{Name: "refund.full." + string(algo), Window: time.Hour, Max: 1, Algorithm: algo}
			d, err := lim.Allow(ctx, full, second)
			require.NoError(t, err)
			require.True(t, d.Allowed)

			// Part of the limit is used first: a token bucket or GCRA that
			// is full anyway cannot show a refund given back twice.
			admitted := 0
			for i := 0; i < 3; i++ {
				d, err := lim.Allow(ctx, wide, first)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				admitted++
			}

			const calls = 10
			droppedBefore, refundsBefore := proxy.Dropped(), proxy.Requests(isRefund)
			for i := 0; i < calls; i++ {
				proxy.DropReplies(1, isRefund)
				ds, err := lim.Decide(ctx, runtime.Request{Limit: wide, Key: first}, runtime.Request{Limit: full, Key: second})
				require.NoError(t, err)
				require.False(t, ds.Allowed, "call %d: the full limit denies", i+1)
				// Each limit says whether it had room: the wide one, whose
				// admission was refunded, has room for this call still.
				require.True(t, ds.Each[0].Allowed, "call %d: the wide limit has room", i+1)
				require.Equal(t, wide.Max-admitted, ds.Each[0].Remaining, "call %d: the refund gave the wide limit's room back", i+1)
				require.False(t, ds.Each[1].Allowed, "call %d", i+1)
			}
			require.Equal(t, calls, proxy.Dropped()-droppedBefore, "every refund's reply must have been dropped")
			require.Equal(t, 2*calls, proxy.Requests(isRefund)-refundsBefore,
				"go-redis must have resent every refund once, or this test shows nothing")

			for i := 0; i < 3*wide.Max; i++ {
				d, err := lim.Allow(ctx, wide, first)
				require.NoError(t, err)
				if d.Allowed {
					admitted++
				}
			}
			t.Logf("%s: %d admitted in one window for Max %d, with %d resent refunds", algo, admitted, wide.Max, calls)
			require.Equal(t, wide.Max, admitted,
				"refunds must apply exactly once: more than Max means a refund ran twice, fewer means one never ran")
		})
	}
}

// isDecision matches the script calls that decide, as the proxy sees them.
func isDecision(args []string) bool {
	if len(args) < 4 || (!strings.EqualFold(args[0], "evalsha") && !strings.EqualFold(args[0], "eval")) {
		return false
	}
	n, err := strconv.Atoi(args[2])
	return err == nil && 3+n < len(args) && (args[3+n] == "a" || args[3+n] == "u")
}

// TestLostDecisionRepliesNeverOverAdmit drops the reply of every third
// decision after Redis recorded it, so the decision is resent and Redis
// records it again: by go-redis, when the round trip is the client's own
// (a timeout longer than the client's read timeout), and by the limiter,
// when the caller reads it (see batcher.decide). The caller sees one
// decision, Redis counts two: the limit over-counts (denies early), and
// never admits more than Max.
func TestLostDecisionRepliesNeverOverAdmit(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()

	resenders := []struct {
		name    string
		timeout time.Duration
	}{
		{"go-redis", 10 * time.Second},
		{"limiter", time.Second},
	}
	for _, by := range resenders {
		for _, algo := range runtime.Algorithms() {
			t.Run(by.name+"/"+string(algo), func(t *testing.T) {
				// Without the deny cache: every call must reach the proxy.
				lim := New(client, WithClock(newFakeClock().Now), WithFailurePolicy(FailClosed),
					WithTimeout(by.timeout), WithDenyCache(0))
				l := runtime.Limit{Name: "lost.decision." + by.name + "." + string(algo), Window: time.Hour, Max: 10, Algorithm: algo}
				admitted, droppedBefore := 0, proxy.Dropped()
				for i := 0; i < 3*l.Max; i++ {
					if i%3 == 0 {
						proxy.DropReplies(1, isDecision)
					}
					d, err := lim.Allow(ctx, l, "k")
					require.NoError(t, err, "a lost reply must be resent, not reported")
					if d.Allowed {
						admitted++
					}
				}
				resent := proxy.Dropped() - droppedBefore
				t.Logf("%s: %d admitted for Max %d, %d decisions resent by %s after a lost reply", algo, admitted, l.Max, resent, by.name)
				require.Positive(t, resent, "decisions must have been resent, or this test shows nothing")
				require.LessOrEqual(t, admitted, l.Max, "a resent decision must never admit beyond Max")
				require.Less(t, admitted, l.Max, "each resent admission is counted twice, so fewer than Max reach callers")
			})
		}
	}
}
