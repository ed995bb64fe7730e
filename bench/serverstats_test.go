package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The redis-µs/op metric is the time redis-server itself spent running
// scripts (EVAL, EVALSHA, FCALL and their _RO forms in INFO commandstats),
// per decision. Every contender decides in script calls; the commands a
// script calls are also listed in commandstats on their own, but their time
// is already part of the script's, so only the script entries are summed.
// A batched call deciding many requests counts once, so for batched rows
// redis-µs/op is the scripts' time divided by the decisions, and
// redis-calls/op (script calls per decision) shows how many decisions
// shared a call: 1 without batching, below 1 with it, near 0 when a deny
// cache answers. Set beside ns/op, redis-µs/op shows how much of a
// decision is the script and how much is the round trip and the client;
// on 2 shared cores the server's time also limits parallel throughput.

// scriptCommands are the commandstats entries that run scripts.
var scriptCommands = []string{
	"cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro",
	"cmdstat_fcall", "cmdstat_fcall_ro",
}

// resetServerStats zeroes the server's command statistics.
func resetServerStats(tb testing.TB, c *redis.Client) {
	tb.Helper()
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		tb.Fatalf("CONFIG RESETSTAT: %v", err)
	}
}

// scriptStats returns the µs the server spent running scripts since the
// last reset, and how many script calls it ran.
func scriptStats(tb testing.TB, c *redis.Client) (micros, calls float64) {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	micros, calls, err = parseScriptStats(info)
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	return micros, calls
}

// reportServerStats adds redis-µs/op and redis-calls/op to a benchmark's
// metrics (per decision: b.N).
func reportServerStats(b *testing.B, c *redis.Client) {
	b.Helper()
	micros, calls := scriptStats(b, c)
	b.ReportMetric(micros/float64(b.N), "redis-µs/op")
	b.ReportMetric(calls/float64(b.N), "redis-calls/op")
}

// parseScriptStats sums usec= and calls= over the script lines of INFO
// commandstats ("cmdstat_evalsha:calls=3,usec=42,usec_per_call=14.00,...").
func parseScriptStats(info string) (micros, calls float64, err error) {
	for line := range strings.Lines(info) {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !slices.Contains(scriptCommands, name) {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			if k != "usec" && k != "calls" {
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %s: %w", name, f, err)
			}
			if k == "usec" {
				micros += n
			} else {
				calls += n
			}
		}
	}
	return micros, calls, nil
}

func TestParseScriptStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=3,usec=42,usec_per_call=14.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_zadd:calls=3,usec=9,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_eval:calls=1,usec=8,usec_per_call=8.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_fcall:calls=2,usec=10,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=1,usec=100,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n"
	micros, calls, err := parseScriptStats(info)
	if err != nil {
		t.Fatal(err)
	}
	if micros != 60 || calls != 6 {
		t.Fatalf("parseScriptStats = %v µs in %v calls, want 60 in 6 (EVALSHA 42/3 + EVAL 8/1 + FCALL 10/2; ZADD is inside the scripts, INFO is ours)", micros, calls)
	}
	if _, _, err := parseScriptStats("cmdstat_evalsha:calls=1,usec=x\r\n"); err == nil {
		t.Fatal("parseScriptStats accepted usec=x")
	}
}

// processCPU returns the CPU time (user and system) this process, the
// client side of every contender, has used: the client-µs/op metric is its
// growth per decision, the client's cost beside Redis's redis-µs/op.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
