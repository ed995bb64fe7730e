package redislimit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestAlgorithmMemoryPerKey measures what one key costs in Redis under each
// algorithm at Max 100 and Max 1000, for the documentation's table, with
// loose upper bounds so that a change of data structure that blows the
// budget fails here. The key is filled with Max admissions spread over
// half a window (the sliding log's worst case: one entry each), or, for the
// sliding window, driven for two windows at the full rate so that every
// bucket it keeps is in use; the largest MEMORY USAGE seen is reported.
func TestAlgorithmMemoryPerKey(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	c := context.Background()
	const name, key = "Notifier.SendCode", "someone@example.com"

	usage := func(t *testing.T) (int64, string) {
		keys, err := client.Keys(c, defaultPrefix+"{*").Result()
		require.NoError(t, err)
		require.Len(t, keys, 1, "one storage key per limit and key")
		n, err := client.Do(c, "MEMORY", "USAGE", keys[0], "SAMPLES", "0").Int64()
		require.NoError(t, err)
		typ, err := client.Type(c, keys[0]).Result()
		require.NoError(t, err)
		enc, err := client.ObjectEncoding(c, keys[0]).Result()
		require.NoError(t, err)
		return n, typ + "/" + enc
	}

	type row struct {
		algo      runtime.Algorithm
		bytes     [2]int64
		structure [2]string
	}
	maxes := [2]int{100, 1000}
	var rows []row
	for _, algo := range runtime.Algorithms() {
		r := row{algo: algo}
		for i, m := range maxes {
			require.NoError(t, client.FlushDB(c).Err())
			clock := newFakeClock()
			lim := New(client, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
			l := runtime.Limit{Name: name, Window: time.Hour, Max: m, Algorithm: algo}
			calls, step := m, l.Window/time.Duration(2*m)
			if algo == runtime.SlidingWindow {
				calls, step = 2*m, l.Window/time.Duration(m)
			}
			admitted := 0
			for j := 0; j < calls; j++ {
				d, err := lim.Allow(c, l, key)
				require.NoError(t, err)
				if d.Allowed {
					admitted++
				}
				if algo == runtime.SlidingWindow || j == calls-1 {
					n, s := usage(t)
					if n > r.bytes[i] {
						r.bytes[i], r.structure[i] = n, s
					}
				}
				clock.Advance(step)
			}
			if algo != runtime.SlidingWindow {
				require.Equal(t, m, admitted, "%s at Max %d: every call of the fill is admitted", algo, m)
			}
		}
		rows = append(rows, r)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Redis %s MEMORY USAGE of one key (name %q, key %q):\n", redisVersion(t, srv), name, key)
	fmt.Fprintf(&b, "%-15s %22s %22s\n", "algorithm", "Max 100", "Max 1000")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-15s %8d B %-11s %8d B %-11s\n", r.algo, r.bytes[0], r.structure[0], r.bytes[1], r.structure[1])
	}
	t.Log(b.String())

	for _, r := range rows {
		if r.algo == runtime.SlidingLog {
			require.LessOrEqual(t, r.bytes[0], int64(3608), "sliding-log at Max 100: half the seed script's 7,216 B")
			require.LessOrEqual(t, r.bytes[1], int64(160_000), "sliding-log at Max 1000")
			continue
		}
		for i, m := range maxes {
			require.LessOrEqual(t, r.bytes[i], int64(512), "%s at Max %d must stay O(1)", r.algo, m)
		}
		require.InDelta(t, r.bytes[0], r.bytes[1], 64, "%s: memory must not grow with Max", r.algo)
	}
}

func redisVersion(t *testing.T, srv *redistest.Server) string {
	info, err := srv.Client(t).Info(context.Background(), "server").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "(unknown version)"
}
