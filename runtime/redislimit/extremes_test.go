package redislimit

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// extremeCounts are the values tried as Max, Burst and cost: the edges of
// what a double holds exactly (2^52, 2^53), of int32 and int64, and of a
// sliding log (runtime.MaxSlidingLog).
var extremeCounts = []int64{0, 1, 1000, 1001, 1 << 31, 1<<52 - 2, 1 << 52, 1<<52 + 2, 1 << 53, 1 << 62, math.MaxInt64}

// extremeWindows run from 1 ms to beyond a year, past each algorithm's
// bound (about 129 and 142 years) to the longest time.Duration.
func extremeWindows() []time.Duration {
	const year = 365 * 24 * time.Hour
	return []time.Duration{time.Millisecond, time.Second + 7*time.Microsecond, time.Hour, year, 100 * year, 130 * year, 143 * year, math.MaxInt64}
}

// extremeHorizon is the latest time the test's clock reaches: the
// limiters count exactly while now is below 2^52 µs after the Unix epoch
// (the year 2112; see runtime.MaxUnits), and the scripts' times are
// absolute.
var extremeHorizon = time.UnixMicro(1<<52 - 1).Add(-365 * 24 * time.Hour)

// TestExtremes compares the backends, call by call, on limits at and
// beyond the bounds runtime.Limit states: every combination of
// extremeCounts as Max and Burst with extremeWindows, under every
// algorithm, called with costs of 1, the capacity and every extreme count,
// alone (Allow, Decide: the script's uniform path) and beside another
// limit (its general path). Each call must give the same Decision on both,
// or the same error; a limit Validate accepts must decide, one it refuses
// must be refused by both limiters.
func TestExtremes(t *testing.T) {
	srv := redistest.StartServer(t)
	h := newDiffHarness(t, srv.Client(t))
	start := h.clock.Now()
	advance := func(d time.Duration) {
		if now := h.clock.Now(); now.Add(d).After(extremeHorizon) {
			d = extremeHorizon.Sub(now)
		}
		h.clock.Advance(d)
	}

	var valid, refused, admitted, denied, costErrors int
	step := 0
	for _, algo := range runtime.Algorithms() {
		bursts := []int64{0}
		if algo == runtime.TokenBucket || algo == runtime.GCRA {
			bursts = extremeCounts
		}
		for _, m := range extremeCounts {
			for _, b := range bursts {
				for _, w := range extremeWindows() {
					l := runtime.Limit{Name: fmt.Sprintf("extremes.%s.%d.%d.%d", algo, m, b, w), Window: w, Max: int(m), Burst: int(b), Algorithm: algo}
					// Each limit starts at the same time, with keys of its own:
					// a key that saw a later time would keep it on both
					// backends until Redis expired it on its own clock.
					h.clock.Advance(start.Sub(h.clock.Now()))
					companion := runtime.Limit{Name: l.Name + ".companion", Window: time.Millisecond, Max: 1 << 40, Algorithm: runtime.FixedWindow}
					if err := l.Validate(); err != nil {
						refused++
						// Both refuse it, whatever the cost.
						for _, n := range []int{1, 2} {
							h.single(step, l, "k", n)
							step++
						}
						continue
					}
					valid++
					c := int64(l.Capacity())
					costs := append([]int64{1, c, 1, c, c - 1, 1}, extremeCounts...)
					for i, n := range costs {
						d := h.single(step, l, "k", int(n))
						step++
						switch {
						case n < 0 || n > c:
							costErrors++
						case d.Allowed:
							admitted++
						case n != 0:
							denied++
						}
						switch i % 4 {
						case 0:
							advance(d.RetryAfter)
						case 1:
							advance(time.Microsecond)
						case 2:
							advance(w / 2)
						}
					}
					h.all(step, []runtime.Request{{Limit: l, Key: "k", Cost: c}, {Limit: companion, Key: "k"}})
					step++
					advance(w)
					h.all(step, []runtime.Request{{Limit: l, Key: "k", Cost: c}, {Limit: companion, Key: "k"}})
					step++
				}
			}
		}
	}
	t.Logf("%d limits decided alike (%d calls admitted, %d denied, %d costs refused on both), %d limits refused by both, %d steps",
		valid, admitted, denied, costErrors, refused, step)
	require.Positive(t, admitted)
	require.Positive(t, denied)
	require.Positive(t, costErrors)
	require.Positive(t, refused)
}

// TestExtremesUnlimited checks what an operator who writes the largest Max
// to mean "unlimited" gets, for the algorithms whose Max is a count per
// window: a limit that admits on both backends at the largest Max the
// algorithm takes, and a clear refusal just above it, never a limiter that
// denies everything. (A bucket's Max is a rate, bounded with its Window
// and Burst; TestExtremes covers those.)
func TestExtremesUnlimited(t *testing.T) {
	srv := redistest.StartServer(t)
	h := newDiffHarness(t, srv.Client(t))
	for _, algo := range []runtime.Algorithm{runtime.SlidingLog, runtime.SlidingWindow, runtime.FixedWindow} {
		largest := int(runtime.MaxUnits)
		if algo == runtime.SlidingLog {
			largest = runtime.MaxSlidingLog
		}
		l := runtime.Limit{Name: "unlimited." + string(algo), Window: time.Second, Max: largest, Algorithm: algo}
		for i := range 3 {
			d := h.single(i, l, "k", 1)
			require.Equal(t, runtime.Decision{Allowed: true, Remaining: largest - 1 - i, ResetAfter: d.ResetAfter}, d, "%s with Max %d", algo, largest)
		}
		for _, over := range []int{largest + 2, 1<<53 - 1, math.MaxInt64} {
			l.Max = over
			_, err := h.mem.Allow(ctx, l, "k")
			require.Error(t, err, "%s with Max %d", algo, over)
			_, rerr := h.red.Allow(ctx, l, "k")
			require.EqualError(t, rerr, err.Error())
			want := "it can be at most 2^52 (4503599627370496)"
			if algo == runtime.SlidingLog && int64(over) <= runtime.MaxUnits {
				want = "it can be at most 1000000"
			}
			require.Contains(t, err.Error(), want)
			require.NotContains(t, err.Error(), `"k"`)
		}
	}
	// Burst is bounded as Max is.
	l := runtime.Limit{Name: "unlimited.burst", Window: time.Microsecond, Max: 1, Burst: 1<<52 + 2, Algorithm: runtime.TokenBucket}
	err := runtime.Validate(runtime.Request{Limit: l, Key: "k"})
	require.ErrorContains(t, err, "Burst 4503599627370498; it can be at most 2^52")
	require.True(t, strings.HasPrefix(err.Error(), "ratelimit: "))
}

// TestExtremesAtRunTime checks that a Max set at run time, by an override
// behind the HTTP middleware, meets the same bounds on both backends: one
// at the bound admits; one beyond them is not applied, and the limit as
// declared decides on both backends (its Max of 10: the 11th call is a
// 429), never a limiter that errs on every call.
func TestExtremesAtRunTime(t *testing.T) {
	srv := redistest.StartServer(t)
	l := runtime.Limit{Name: "Extremes.Route", Window: time.Minute, Max: 10, Algorithm: runtime.FixedWindow}
	for _, c := range []struct {
		max      int
		statuses []int
	}{
		{int(runtime.MaxUnits), []int{http.StatusOK, http.StatusOK, http.StatusOK}},
		{1<<53 - 1, append(slices.Repeat([]int{http.StatusOK}, 10), http.StatusTooManyRequests)},
	} {
		for name, backend := range map[string]runtime.Limiter{
			"memory": memlimit.New(),
			"redis":  New(srv.Client(t), WithPrefix(fmt.Sprintf("%s:%d:", t.Name(), c.max)), WithFailurePolicy(FailClosed)),
		} {
			var ov runtime.Overrides
			require.NoError(t, ov.Set(map[string]runtime.Override{l.Name: {Max: c.max}}))
			var limiterErr error
			var logs bytes.Buffer
			lim := runtime.Operate(backend, runtime.WithOverrides(&ov), runtime.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			h := ratelimithttp.Middleware(lim, l, ratelimithttp.ByHeader("X-User"),
				ratelimithttp.OnLimiterError(func(_ *http.Request, err error) { limiterErr = err }))(
				http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
			for i, status := range c.statuses {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.Header.Set("X-User", "someone@example.com")
				h.ServeHTTP(rec, req)
				require.Equal(t, status, rec.Code, "%s with Max %d, call %d", name, c.max, i+1)
			}
			require.NoError(t, limiterErr)
			if c.max <= int(runtime.MaxUnits) {
				require.Empty(t, logs.String())
				continue
			}
			require.Contains(t, logs.String(), "it can be at most 2^52", name)
			require.NotContains(t, logs.String(), "someone@example.com")
		}
	}
}
