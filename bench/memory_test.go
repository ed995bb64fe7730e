package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMemoryPerKey prints what one key costs in Redis (MEMORY USAGE, all
// samples) after 100 and after 1000 admissions in one window, for every
// contender. Run with -v to see the table. It asserts that each library
// keeps exactly one key per limited key, and that ratelimitgen admitted
// every call; the peers' figures are logged, not judged.
func TestMemoryPerKey(t *testing.T) {
	c := startRedis(t)
	ctx := context.Background()
	counts := []int{100, 1000}

	var table strings.Builder
	fmt.Fprintf(&table, "\n%-26s %-30s %22s %22s  %s\n", "library", "algorithm", "bytes @100 admissions", "bytes @1000 admissions", "Redis type/encoding @100, @1000")
	for _, ct := range contenders {
		var cells []string
		var shapes []string
		for _, n := range counts {
			flush(t, c)
			// A window far longer than the fill, so every admission still
			// counts when the key is measured.
			decide, err := ct.build(c, spec{window: time.Hour, max: n}, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			admitted := 0
			for range n {
				ok, err := decide(ctx, "someone@example.com")
				if err != nil {
					t.Fatalf("%s: %v", ct.name, err)
				}
				if ok {
					admitted++
				}
			}
			if strings.HasPrefix(ct.name, "ratelimitgen") && admitted != n {
				t.Errorf("%s admitted %d of %d calls at Max %d in one window; want all", ct.name, admitted, n, n)
			}
			bytes, shape := onlyKeyUsage(t, c, ct.name)
			cell := fmt.Sprintf("%d", bytes)
			if admitted != n {
				cell = fmt.Sprintf("%d (%d admitted)", bytes, admitted)
			}
			cells = append(cells, cell)
			shapes = append(shapes, shape)
		}
		fmt.Fprintf(&table, "%-26s %-30s %22s %22s  %s\n", ct.name, ct.algorithm, cells[0], cells[1], strings.Join(shapes, ", "))
	}
	t.Log(table.String())
}

// onlyKeyUsage checks that the server holds exactly one key (besides
// ratelimitgen's instances key) and returns its
// MEMORY USAGE (SAMPLES 0: every element counted) and type/encoding.
func onlyKeyUsage(t *testing.T, c *redis.Client, who string) (int64, string) {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// ratelimitgen's limiters stamp their ids in one key of their prefix
	// (see redislimit.WithInstances): one key per fleet, not per limited
	// key, so it is left out.
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "ratelimit:instances" })
	if len(keys) != 1 {
		t.Fatalf("%s left %d keys %q for one limited key; want exactly 1", who, len(keys), keys)
	}
	n, err := c.MemoryUsage(ctx, keys[0], 0).Result()
	if err != nil {
		t.Fatalf("MEMORY USAGE %s: %v", keys[0], err)
	}
	if n <= 0 {
		t.Fatalf("MEMORY USAGE %s = %d", keys[0], n)
	}
	typ, err := c.Type(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := c.ObjectEncoding(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n, typ + "/" + enc
}
