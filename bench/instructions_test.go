package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// BenchmarkRedisInstructions counts what each decision costs redis-server
// in instructions, which, unlike its time, is the same from run to run and
// machine to machine of one kind: redis-server runs under valgrind's
// callgrind, and the redis-instr/op metric is the instructions it ran while
// the benchmark's decisions were made (64 callers, 10,000 keys, Max 100 per
// second), per decision. The -nobatch rows are ratelimitgen deciding each
// call in a script call of its own, as redis_rate does. Under callgrind
// Redis is some fifty times slower, so ratelimitgen runs with a one-minute
// timeout here, and give it a fixed count, as in
//
//	go test -run '^$' -bench RedisInstructions -benchtime 8000x
//
// At that speed a key of 10,000 is called about once in its window, so
// its log is mostly fresh; at full speed it holds some fifteen entries and
// one of them goes stale about every call. The keys=100 rows of the sliding
// logs are a busy log whatever the speed: 100 keys under Max 128 per hour,
// so that each call adds an entry to a log of 2 to 82 and none goes stale.
// The clock=paced rows give a key the log it has at full speed whatever
// callgrind's: 1,000 keys of Max 100 per second, warmed uncounted, and a
// clock that advances 1s/15,000 per reading (64 at a time), so that a key,
// called once in 1,000 calls, holds fifteen admissions of its last second
// and one goes stale at each call; the max= rows are the same keys under
// Max 1,000 and 1,000,000 per second.
// (A batch's size still varies with the timing, and with it the share of
// each script call's fixed cost: rows move by about 1% from run to run.)
//
// With CALLGRIND_DIR set, each row keeps its callgrind.out in a directory
// of that name under it, for callgrind_annotate.
func BenchmarkRedisInstructions(b *testing.B) {
	needCallgrind(b)
	slow := redislimit.WithTimeout(time.Minute)
	slidingLog := contender{name: "ratelimitgen-sliding-log", build: ratelimitgen(runtime.SlidingLog, false, slow)}
	busy := keySet{name: "100", spec: spec{window: time.Hour, max: 128}, keys: manyKeys(100)}
	paced := func(algo runtime.Algorithm, suffix string, opts ...redislimit.Option) contender {
		build := ratelimitgen(algo, true, append([]redislimit.Option{slow}, opts...)...)
		return contender{name: "ratelimitgen-" + string(algo) + suffix, build: func(c *redis.Client, s spec, _ func() time.Time) (decideFunc, error) {
			return build(c, s, pacedClock(time.Second/15000))
		}}
	}
	pacedKeys := keySet{name: "1000/clock=paced", spec: keySets[1].spec, keys: manyKeys(1000), paced: true}
	pacedLarge := func(max int) keySet {
		return keySet{name: fmt.Sprintf("1000/clock=paced/max=%d", max), spec: spec{window: time.Second, max: max}, keys: pacedKeys.keys, paced: true}
	}
	for _, row := range []struct {
		ct contender
		ks keySet
	}{
		{contender{name: "ratelimitgen-gcra", build: ratelimitgen(runtime.GCRA, false, slow)}, keySets[1]},
		{ceilingContenders[1], keySets[1]},
		{contender{name: "redis_rate", build: redisRate}, keySets[1]},
		{contender{name: "ratelimitgen-gcra-nobatch", build: ratelimitgen(runtime.GCRA, false, append([]redislimit.Option{slow}, unbatched...)...)}, keySets[1]},
		{slidingLog, keySets[1]},
		{ceilingContenders[0], keySets[1]},
		{contender{name: "ratelimitgen-sliding-log-nobatch", build: ratelimitgen(runtime.SlidingLog, false, append([]redislimit.Option{slow}, unbatched...)...)}, keySets[1]},
		{slidingLog, busy},
		{ceilingContenders[0], busy},
		{paced(runtime.GCRA, ""), pacedKeys},
		{paced(runtime.SlidingLog, ""), pacedKeys},
		{paced(runtime.SlidingLog, ""), pacedLarge(1000)},
		{paced(runtime.SlidingLog, ""), pacedLarge(1_000_000)},
		{paced(runtime.GCRA, "-nobatch", unbatched...), pacedKeys},
		{paced(runtime.SlidingLog, "-nobatch", unbatched...), pacedKeys},
	} {
		ct, ks := row.ct, row.ks
		b.Run("lib="+ct.name+"/callers=64/keys="+ks.name, func(b *testing.B) {
			dir := b.TempDir()
			if d := os.Getenv("CALLGRIND_DIR"); d != "" {
				dir = filepath.Join(d, strings.ReplaceAll(b.Name(), "/", "_"))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			srv := redistest.StartServer(b, redistest.Under("valgrind", "--tool=callgrind",
				"--callgrind-out-file="+filepath.Join(dir, "callgrind.out")))
			c := newClient(srv.Addr())
			b.Cleanup(func() { _ = c.Close() })
			decide, err := ct.build(c, ks.spec, time.Now)
			if err != nil {
				b.Fatal(err)
			}
			// Load the scripts and warm the keys, uncounted: a paced clock's
			// keys until they hold the log of full speed.
			calls := min(200, len(ks.keys))
			if ks.paced {
				calls = 16 * len(ks.keys)
			}
			warm(b, decide, ks.keys, calls)
			callgrind(b, "-z", srv.PID())
			runParallel(b, decide, ks.keys, 64)
			b.StopTimer()
			callgrind(b, "-d", srv.PID())
			b.ReportMetric(float64(dumpedInstructions(b, dir))/float64(b.N), "redis-instr/op")
		})
	}
}

// needCallgrind fails b unless valgrind's callgrind and callgrind_control
// are installed.
func needCallgrind(b *testing.B) {
	b.Helper()
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s not found in PATH; install it with: sudo apt-get install -y valgrind", tool)
		}
	}
}

// warm makes calls decisions from 64 goroutines, walking keys round,
// uncounted: it loads the scripts and warms the connections and keys.
func warm(b *testing.B, decide decideFunc, keys []string, calls int) {
	b.Helper()
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := g; i < calls; i += 64 {
				if _, err := decide(context.Background(), keys[i%len(keys)]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// pacedClock returns a clock that starts now and advances by 64 steps
// every 64 readings, so that calls batched together mostly share a time,
// as they share Redis's TIME.
func pacedClock(step time.Duration) func() time.Time {
	start := time.Now()
	var readings atomic.Int64
	return func() time.Time { return start.Add(time.Duration(readings.Add(1)/64*64) * step) }
}

// callgrind runs callgrind_control with op (-z zeroes the counts, -d dumps
// them) for the process pid.
func callgrind(b *testing.B, op string, pid int) {
	b.Helper()
	if out, err := exec.Command("callgrind_control", op, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		b.Fatalf("callgrind_control %s: %v: %s", op, err, out)
	}
}

// dumpedInstructions returns the instructions of the one dump that
// callgrind_control -d wrote in dir (callgrind.out.N; the file without a
// number is written only when the process ends).
func dumpedInstructions(b *testing.B, dir string) int64 {
	b.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "callgrind.out.*"))
	if err != nil || len(files) != 1 {
		b.Fatalf("want one callgrind dump in %s, found %v (%v)", dir, files, err)
	}
	return summary(b, files[0])
}

// summary returns the instructions counted in file, a callgrind or
// cachegrind output: the first number of its summary line.
func summary(b *testing.B, file string) int64 {
	b.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "summary: "); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				b.Fatalf("%s: summary %q: %v", file, v, err)
			}
			return n
		}
	}
	b.Fatalf("%s: no summary line", file)
	return 0
}
