package generate

import (
	"go/types"
	"slices"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestAlgorithmsMatchRuntime keeps the parser's algo= names and the
// generator's constant names in step with the runtime, which the generator
// does not import.
func TestAlgorithmsMatchRuntime(t *testing.T) {
	var names []string
	for _, a := range runtime.Algorithms() {
		names = append(names, string(a))
	}
	if !slices.Equal(names, parse.Algorithms) {
		t.Fatalf("parse.Algorithms = %v, runtime.Algorithms() = %v", parse.Algorithms, names)
	}
	consts := map[string]runtime.Algorithm{
		"SlidingLog":    runtime.SlidingLog,
		"SlidingWindow": runtime.SlidingWindow,
		"FixedWindow":   runtime.FixedWindow,
		"TokenBucket":   runtime.TokenBucket,
		"GCRA":          runtime.GCRA,
	}
	if len(algoConsts) != len(consts) {
		t.Fatalf("algoConsts has %d entries, the runtime %d constants", len(algoConsts), len(consts))
	}
	for name, value := range consts {
		if algoConsts[string(value)] != name {
			t.Errorf("algoConsts[%q] = %q, want runtime.%s", value, algoConsts[string(value)], name)
		}
	}
	if parse.DefaultAlgorithm != string(runtime.Algorithms()[0]) {
		t.Errorf("parse.DefaultAlgorithm = %q; the runtime's default is %q", parse.DefaultAlgorithm, runtime.Algorithms()[0])
	}
}

// TestBoundsMatchRuntime checks that the generator refuses exactly the
// limits that the runtime's Limit.Validate refuses for their size, so that
// generated limits always validate.
func TestBoundsMatchRuntime(t *testing.T) {
	for _, c := range []struct {
		window time.Duration
		burst  int
	}{
		{time.Second, 1}, {time.Hour, 1_000_000}, {87600 * time.Hour, 1000}, {87600 * time.Hour, 14},
		{87600 * time.Hour, 15}, {1 << 52 * time.Microsecond, 1}, {(1<<52 + 1) * time.Microsecond, 1},
		{time.Duration(1<<52/3+1) * time.Microsecond, 3}, {time.Duration(1<<52/3) * time.Microsecond, 3},
		{time.Minute, 2147483647}, {(1<<52/11*10 + 10) * time.Microsecond, 1}, {(1<<52/11*10 + 20) * time.Microsecond, 1},
		{292 * 365 * 24 * time.Hour, 1},
	} {
		for _, algo := range parse.Algorithms {
			for _, max := range []int{1, 3, 1000, 2147483647} {
				burst := c.burst
				if !parse.HasBurst(algo) {
					burst = 0
				}
				l := runtime.Limit{Name: "x", Window: c.window, Max: max, Algorithm: runtime.Algorithm(algo), Burst: burst}
				refused := l.Validate() != nil
				capacity := (&limit{algo: algo, max: max, burst: burst}).capacity()
				got := tokenBucketTooLarge(algo, c.window, capacity) || longestWait(algo, c.window, max, capacity) > maxExactUnits
				if got != refused {
					t.Errorf("%s window %v max %d burst %d: generator refuses %v, runtime refuses %v (%v)", algo, c.window, max, burst, got, refused, l.Validate())
				}
			}
		}
	}
}

func TestCapacity(t *testing.T) {
	for _, c := range []struct {
		algo       string
		max, burst int
		want       int
	}{
		{"", 10, 0, 10}, {"sliding-window", 10, 0, 10}, {"fixed-window", 10, 0, 10},
		{"token-bucket", 10, 0, 10}, {"token-bucket", 10, 25, 25}, {"gcra", 10, 3, 3}, {"gcra", 10, 0, 10},
	} {
		l := &limit{algo: c.algo, max: c.max, burst: c.burst}
		if got := l.capacity(); got != c.want {
			t.Errorf("capacity of %s max %d burst %d = %d, want %d", c.algo, c.max, c.burst, got, c.want)
		}
		rl := runtime.Limit{Name: "x", Window: time.Second, Max: c.max, Algorithm: runtime.Algorithm(c.algo), Burst: c.burst}
		// The runtime admits a cost of exactly the capacity, and refuses one more.
		lim := runtime.NewMemoryLimiter()
		if _, err := runtime.AllowN(t.Context(), lim, rl, "k", c.want); err != nil {
			t.Errorf("%s: the runtime refuses a cost of the capacity %d: %v", c.algo, c.want, err)
		}
		if _, err := runtime.AllowN(t.Context(), lim, rl, "k2", c.want+1); err == nil {
			t.Errorf("%s: the runtime accepts a cost of %d, above the capacity", c.algo, c.want+1)
		}
	}
}

func TestSlidingLogMemory(t *testing.T) {
	for max, want := range map[int]string{129: "15 KB", 1000: "117 KB", 100_000: "11.4 MB", 2147483647: "240.0 GB"} {
		if got := slidingLogMemory(max); got != want {
			t.Errorf("slidingLogMemory(%d) = %q, want %q", max, got, want)
		}
	}
}

func TestWindowNickname(t *testing.T) {
	for w, want := range map[time.Duration]string{
		time.Second: "per-second", time.Minute: "per-minute", time.Hour: "hourly", 24 * time.Hour: "daily",
		7 * 24 * time.Hour: "weekly", 10 * time.Minute: "per-10m", 90 * time.Second: "per-90s", 48 * time.Hour: "per-48h",
		1500 * time.Millisecond: "per-1.5s",
	} {
		if got := windowNickname(w); got != want {
			t.Errorf("windowNickname(%v) = %q, want %q", w, got, want)
		}
	}
}

func TestLimitVarBase(t *testing.T) {
	pkg := types.NewPackage("p", "p")
	owner := types.NewTypeName(0, pkg, "Notifier", nil)
	fn := types.NewFunc(0, pkg, "SendCode", nil)
	for _, c := range []struct {
		name  string
		index int
		want  string
	}{
		{"Notifier.SendCode", 0, "limitNotifierSendCode"},
		{"custom", 0, "limitNotifierSendCode"},
		{"Notifier.SendCode.daily", 1, "limitNotifierSendCodeDaily"},
		{"Notifier.SendCode-per-hour", 1, "limitNotifierSendCodePerHour"},
		{"sendcode-per-hour", 2, "limitNotifierSendCodeSendcodePerHour"},
		{"Notifier.SendCode", 1, "limitNotifierSendCodeNotifierSendCode"},
		{"日次", 1, "limitNotifierSendCode2"},
		{"a.b:c@d", 3, "limitNotifierSendCodeABCD"},
	} {
		l := &limit{owner: owner, fn: fn, name: c.name, index: c.index}
		if got := limitVarBase(l); got != c.want {
			t.Errorf("limitVarBase(%q, #%d) = %q, want %q", c.name, c.index, got, c.want)
		}
	}
}
