package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The redis-µs/op metric is the time redis-server itself spent running
// scripts (EVAL and EVALSHA in INFO commandstats), per decision. Every
// contender decides in one script call; the commands a script calls are
// also listed in commandstats on their own, but their time is already part
// of the script's, so only the script entries are summed. Set beside ns/op it shows how
// much of a decision is the script and how much is the round trip and the
// client; on 2 shared cores the server's time also limits parallel
// throughput.

// resetServerStats zeroes the server's command statistics.
func resetServerStats(tb testing.TB, c *redis.Client) {
	tb.Helper()
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		tb.Fatalf("CONFIG RESETSTAT: %v", err)
	}
}

// serverMicros returns the µs the server spent running scripts since the
// last reset.
func serverMicros(tb testing.TB, c *redis.Client) float64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	total, err := parseCommandMicros(info)
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	return total
}

// parseCommandMicros sums usec= over the EVAL and EVALSHA lines of INFO
// commandstats ("cmdstat_evalsha:calls=3,usec=42,usec_per_call=14.00,...").
func parseCommandMicros(info string) (float64, error) {
	total := 0.0
	for line := range strings.Lines(info) {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_eval" && name != "cmdstat_evalsha") {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, err
				}
				total += n
			}
		}
	}
	return total, nil
}

func TestParseCommandMicros(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=3,usec=42,usec_per_call=14.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_zadd:calls=3,usec=9,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_eval:calls=1,usec=8,usec_per_call=8.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=1,usec=100,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n"
	got, err := parseCommandMicros(info)
	if err != nil {
		t.Fatal(err)
	}
	if got != 50 {
		t.Fatalf("parseCommandMicros = %v, want 50 (EVALSHA 42 + EVAL 8; ZADD is inside the scripts, INFO is ours)", got)
	}
	if _, err := parseCommandMicros("cmdstat_evalsha:calls=1,usec=x\r\n"); err == nil {
		t.Fatal("parseCommandMicros accepted usec=x")
	}
}
