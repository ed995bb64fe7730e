package generate

import (
	"errors"
	"go/types"
	"slices"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestRuntimeConst checks the names the generated code spells the
// runtime's algorithms and modes with (the golden files compile them).
func TestRuntimeConst(t *testing.T) {
	want := map[runtime.Algorithm]string{
		runtime.SlidingLog: "SlidingLog", runtime.SlidingWindow: "SlidingWindow", runtime.FixedWindow: "FixedWindow",
		runtime.TokenBucket: "TokenBucket", runtime.GCRA: "GCRA",
	}
	for _, a := range runtime.Algorithms() {
		if got := runtimeConst(a); got != want[a] {
			t.Errorf("runtimeConst(%q) = %q, want %q", a, got, want[a])
		}
	}
	for m, want := range map[runtime.Mode]string{runtime.ModeEnforce: "ModeEnforce", runtime.ModeShadow: "ModeShadow", runtime.ModeOff: "ModeOff"} {
		if got := runtimeConst(m); got != want {
			t.Errorf("runtimeConst(%v) = %q, want %q", m, got, want)
		}
	}
}

// TestCapacity checks that a constant cost the generator accepts is one
// the runtime admits, and one more is an error.
func TestCapacity(t *testing.T) {
	for _, c := range []struct {
		algo       runtime.Algorithm
		max, burst int
		want       int
	}{
		{"", 10, 0, 10}, {runtime.SlidingWindow, 10, 0, 10}, {runtime.FixedWindow, 10, 0, 10},
		{runtime.TokenBucket, 10, 0, 10}, {runtime.TokenBucket, 10, 25, 25}, {runtime.GCRA, 10, 3, 3}, {runtime.GCRA, 10, 0, 10},
	} {
		l := &limit{name: "x", window: time.Second, algo: c.algo, max: c.max, burst: c.burst}
		if got := l.capacity(); got != c.want {
			t.Errorf("capacity of %s max %d burst %d = %d, want %d", c.algo, c.max, c.burst, got, c.want)
		}
		lim := memlimit.New()
		if _, err := lim.Decide(t.Context(), runtime.Request{Limit: l.runtimeLimit(), Key: "k", Cost: int64(c.want)}); err != nil {
			t.Errorf("%s: the runtime refuses a cost of the capacity %d: %v", c.algo, c.want, err)
		}
		if _, err := lim.Decide(t.Context(), runtime.Request{Limit: l.runtimeLimit(), Key: "k2", Cost: int64(c.want) + 1}); !errors.Is(err, runtime.ErrInvalidCost) {
			t.Errorf("%s: a cost of %d, above the capacity: got %v, want an error wrapping runtime.ErrInvalidCost", c.algo, c.want+1, err)
		}
	}
}

// TestBurstApplies: burst= sizes the buckets of the token bucket and
// GCRA, as the directive reference says.
func TestBurstApplies(t *testing.T) {
	var got []runtime.Algorithm
	for _, a := range runtime.Algorithms() {
		if parse.BurstApplies(a) {
			got = append(got, a)
		}
	}
	if want := []runtime.Algorithm{runtime.TokenBucket, runtime.GCRA}; !slices.Equal(got, want) {
		t.Errorf("burst= applies to %v, want %v", got, want)
	}
}

func TestSlidingLogMemory(t *testing.T) {
	for max, want := range map[int]string{129: "1 KB", 1000: "7 KB", 100_001: "684 KB", 1_000_000: "6.7 MB", 2147483647: "14.0 GB"} {
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
		if got := windowNickname(w, runtime.Calendar{}); got != want {
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
