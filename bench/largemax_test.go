package bench

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkLargeMax runs the sliding log beside GCRA, whose cost does not
// depend on Max, at Max 100, 1,000 and 1,000,000 per second: 64 callers on
// 10,000 keys, so that at a 2-core machine's rate each key holds some ten
// entries whatever its Max, as a key of a large limit mostly does. A
// sliding log is stored as a small log while it holds up to 128 entries,
// so its three rows should cost alike:
//
//	go test -run '^$' -bench LargeMax -count 5 | tee largemax.txt
//	benchstat -col /lib largemax.txt
func BenchmarkLargeMax(b *testing.B) {
	c := startRedis(b)
	const callers = 64
	for _, max := range []int{100, 1000, 1_000_000} {
		ks := keySet{spec: spec{window: time.Second, max: max}, keys: manyKeys(10000)}
		for _, ct := range []contender{contenders[1], contenders[0]} {
			b.Run(fmt.Sprintf("max=%d/lib=%s", max, ct.name), func(b *testing.B) {
				flush(b, c)
				decide, err := ct.build(c, ks.spec, time.Now)
				if err != nil {
					b.Fatal(err)
				}
				resetServerStats(b, c)
				runParallel(b, decide, ks.keys, callers)
				reportServerStats(b, c)
			})
		}
	}
}
