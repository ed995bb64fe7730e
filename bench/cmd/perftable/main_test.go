package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/ratelimitgen/ratelimitgen/bench
cpu: Some CPU
BenchmarkAllow/lib=ratelimitgen-gcra/callers=1/keys=10000-2         	    3254	    50000 ns/op	         1.000 admitted/op	       40 p50-µs	      100 p99-µs	         1.000 redis-calls/op	        12 redis-µs/op	    1328 B/op	      24 allocs/op	         8 client-µs/op
BenchmarkAllow/lib=redis_rate/callers=1/keys=10000-2                	    6849	    40000 ns/op	         1.000 admitted/op	        40 p50-µs	       264.2 p99-µs	         1.000 redis-calls/op	         8.521 redis-µs/op	     678 B/op	      19 allocs/op
BenchmarkAllow/lib=ceiling-gcra/callers=1/keys=10000-2              	    6849	    40000 ns/op	         1.000 admitted/op	        20 p50-µs	       100 p99-µs	         1.000 redis-calls/op	         5 redis-µs/op	     500 B/op	      10 allocs/op
BenchmarkAllow/lib=redis_rate/callers=64/keys=denied-2                	    6849	    10000 ns/op	         0 admitted/op	        600 p50-µs	       900 p99-µs	         1.000 redis-calls/op	         8 redis-µs/op	     678 B/op	      19 allocs/op
BenchmarkAllow/lib=ratelimitgen-gcra/callers=64/keys=denied-2         	    3254	    1000 ns/op	         0 admitted/op	       60 p50-µs	      100 p99-µs	         0.001 redis-calls/op	        0.01 redis-µs/op	    100 B/op	      2 allocs/op
BenchmarkAllow/lib=ratelimitgen-gcra/callers=1/keys=10000-2         	    3254	    20000 ns/op	         1.000 admitted/op	       20 p50-µs	      100 p99-µs	         1.000 redis-calls/op	        12 redis-µs/op	    1328 B/op	      24 allocs/op	        12 client-µs/op
BenchmarkAllow/lib=redis_rate/callers=1/keys=10000-2                	    6849	    40000 ns/op	         1.000 admitted/op	        40 p50-µs	       264.2 p99-µs	         1.000 redis-calls/op	         8.521 redis-µs/op	     678 B/op	      19 allocs/op
BenchmarkAllow/lib=ceiling-gcra/callers=1/keys=10000-2              	    6849	    10000 ns/op	         1.000 admitted/op	        40 p50-µs	       100 p99-µs	         1.000 redis-calls/op	         5 redis-µs/op	     500 B/op	      10 allocs/op
PASS
`

func TestParseRender(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.libs; len(got) != 3 || got[0] != "ratelimitgen-gcra" || got[1] != "redis_rate" || got[2] != "ceiling-gcra" {
		t.Fatalf("libs = %v", got)
	}
	if len(res.settings) != 2 || res.settings[0] != (setting{1, "10000"}) || res.settings[1] != (setting{64, "denied"}) {
		t.Fatalf("settings = %v, want 1/10000 then 64/denied", res.settings)
	}
	var b strings.Builder
	if err := render(&b, res, []string{"a note"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Medians of 2 repetitions",
		"GOMAXPROCS 2.",
		"cpu: Some CPU",
		"a note",
		// 1e9/50000 and 1e9/20000: median 35,000/s; paired ratios 0.8 and 2
		// to redis_rate, 0.8 and 0.5 to the GCRA ceiling (p50: 2 and 0.5).
		"| ratelimitgen-gcra | 1 | 10000 | 35,000 | 1.40× (0.80–2.00) | 0.65× (0.50–0.80) | 30.0 | 0.75× (0.50–1.00) | 1.25× (0.50–2.00) | 100 | 24.0 | 1,328 | 12.0 | 10.0 | 1.00 | 1.00 |",
		"| redis_rate | 1 | 10000 | 25,000 | 1 | 0.62× (0.25–1.00) | 40.0 | 1 | 1.50× (1.00–2.00) |",
		"| ceiling-gcra | 1 | 10000 | 62,500 | 2.50× (1.00–4.00) | 1 | 30.0 | 0.75× (0.50–1.00) | 1 |",
		// No ceiling ran in this setting.
		"| ratelimitgen-gcra | 64 | denied | 1,000,000 | 10.00× | – | 60.0 | 0.10× | – | 100 | 2.00 | 100 | 0.010 | – | 0.001 | 0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestSig(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.0000005: "<0.001", 0.0123: "0.012", 1.5: "1.50", 12.34: "12.3", 123.4: "123", 12345: "12,345"} {
		if got := sig(v); got != want {
			t.Errorf("sig(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestFactor(t *testing.T) {
	for v, want := range map[float64]string{238.4: "238", 4.204: "4.20", 0.345: "0.34", 0.000035: "0.000035", 0.0071: "0.0071"} {
		if got := factor(v); got != want {
			t.Errorf("factor(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

const inProcessSample = `cpu: Some CPU
BenchmarkInProcess/lib=memory-gcra/callers=64/keys=4096-2         	 100	       50 ns/op	         1.000 admitted/op	       0 B/op	       0 allocs/op
BenchmarkInProcess/lib=sethvargo-memorystore/callers=64/keys=4096-2 	 100	      100 ns/op	         0.750 admitted/op	       0 B/op	       0 allocs/op
BenchmarkInProcess/lib=memory-gcra/callers=64/keys=hot-2          	 100	       90 ns/op	         0.300 admitted/op	       0 B/op	       0 allocs/op
BenchmarkInProcess/lib=xtime-rate-single/callers=64/keys=hot-2    	 100	      100 ns/op	         1.000 admitted/op	       0 B/op	       0 allocs/op
BenchmarkInProcessIdleKey/lib=memory-gcra-2                        	   1	      300 ns/op	       120 B/idle-key	       96 B/op	       1 allocs/op
BenchmarkInProcess/lib=memory-gcra/callers=64/keys=4096-2         	 100	       70 ns/op	         1.000 admitted/op	       0 B/op	       0 allocs/op
BenchmarkInProcess/lib=sethvargo-memorystore/callers=64/keys=4096-2 	 100	      100 ns/op	         0.750 admitted/op	       0 B/op	       0 allocs/op
`

func TestParseRenderInProcess(t *testing.T) {
	res, err := parse(strings.NewReader(inProcessSample), inProcessTable.prefixes...)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := renderInProcess(&b, res, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Medians of 2 repetitions",
		// 50 and 70 against 100 and 100.
		"| memory-gcra | 64 | 4096 | 60.0 | 50.0–70.0 | 0.60× (0.50–0.70) memorystore | 1.00 | 0 | 0 | – |",
		"| sethvargo-memorystore | 64 | 4096 | 100 | 100–100 | 1 | 0.750 |",
		"| memory-gcra | 64 | hot | 90.0 | 90.0–90.0 | 0.90× single | 0.300 |",
		"| memory-gcra | 1 | new | 300 | 300–300 | – | – | 96.0 | 1.00 | 120 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "| 64 | hot |") < strings.Index(out, "| 64 | 4096 |") {
		t.Errorf("the 4,096-key rows should come first:\n%s", out)
	}
}
