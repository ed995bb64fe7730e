package main

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	var in strings.Builder
	for _, l := range []string{
		"BenchmarkCluster/callers=64/topology=server/lib=ratelimitgen-gcra-2  100  10000 ns/op  1.000 admitted/op  0.05 redis-calls/op  4.0 redis-µs/op",
		"BenchmarkCluster/callers=64/topology=server/lib=ratelimitgen-gcra-2  100  30000 ns/op  1.000 admitted/op  0.05 redis-calls/op  6.0 redis-µs/op",
		"BenchmarkCluster/callers=64/topology=server/lib=ratelimitgen-gcra-2  100  20000 ns/op  1.000 admitted/op  0.05 redis-calls/op  5.0 redis-µs/op",
		"BenchmarkCluster/callers=64/topology=cluster3/lib=ratelimitgen-gcra-2  100  5000 ns/op  1.000 admitted/op  0.10 redis-calls/op  6.0 redis-µs/op",
		"BenchmarkCluster/callers=64/topology=server/lib=redis_rate-2  100  40000 ns/op  1.000 admitted/op  1.000 redis-calls/op  8.0 redis-µs/op",
		"BenchmarkCluster/callers=64/topology=cluster3/lib=redis_rate-2  100  20000 ns/op  1.000 admitted/op  1.000 redis-calls/op  8.0 redis-µs/op",
		"PASS",
	} {
		in.WriteString(l + "\n")
	}
	rows, err := parse(strings.NewReader(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := render(&out, rows); err != nil {
		t.Fatal(err)
	}
	// The median server row is 20,000 ns/op: 50,000 decisions/s; the
	// Cluster's 200,000 is 4× that and 4× redis_rate's 50,000 there.
	for _, want := range []string{
		"| 64 | ratelimitgen-gcra | 50000 | 200000 | 4.00 | 4.00 | 5.00 → 6.00 (1.20×) | 0.050 → 0.100 (2.00×) |",
		"| 64 | redis_rate | 25000 | 50000 | 2.00 | 1.00 | 8.00 → 8.00 (1.00×) | 1.000 → 1.000 (1.00×) |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := parse(strings.NewReader("PASS\n")); err == nil {
		t.Error("parse accepted output without benchmark lines")
	}
}
