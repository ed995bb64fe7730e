package e2e

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type reportCalls struct{ run, export int }

func (c *reportCalls) Run(context.Context, string) error { c.run++; return nil }
func (c *reportCalls) Export(context.Context, Quota) error {
	c.export++
	return nil
}

// A max computed per call decides per tenant: each tenant gets its plan's
// calls, and a tenant whose plan gives none gets an error, not a panic and
// not a denial.
func exercisePlans(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	next := &reportCalls{}
	r := NewRateLimitedReports(next, lim)
	for tenant, max := range planLimits {
		ctx := WithTenant(context.Background(), tenant)
		for n := range max {
			if err := r.Run(ctx, "daily"); err != nil {
				t.Fatalf("%s: call %d of %d: %v", tenant, n+1, max, err)
			}
		}
		var le *runtime.LimitError
		if err := r.Run(ctx, "daily"); !errors.As(err, &le) || le.Limit.Name != here+"Reports.Run" || le.Limit.Max != max {
			t.Fatalf("%s: call %d: got %v, want a denial by %sReports.Run with Max %d", tenant, max+1, err, here, max)
		}
	}
	err := r.Run(WithTenant(context.Background(), "nobody"), "daily")
	if err == nil || errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("a tenant without a plan: got %v, want the limiter's error about Max 0", err)
	}
	if want := planLimits["free"] + planLimits["pro"]; next.run != want {
		t.Fatalf("the wrapped Run ran %d times; want %d", next.run, want)
	}
}

func TestPlansMemory(t *testing.T) {
	exercisePlans(t, memlimit.New())
}

func TestPlansRedis(t *testing.T) {
	exercisePlans(t, newRedisLimiter(t))
}

// recordingLimiter admits every call and keeps the requests it is asked
// about.
type recordingLimiter struct{ reqs []runtime.Request }

func (l *recordingLimiter) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	l.reqs = append(l.reqs, reqs...)
	return memlimit.New().Decide(ctx, reqs...)
}

// Each call's limit carries its own Max, converted from the int64; the
// package's variable keeps no Max, and has the directive's mode.
func TestPlansLimitOfEachCall(t *testing.T) {
	lim := &recordingLimiter{}
	r := NewRateLimitedReports(&reportCalls{}, lim)
	for _, q := range []Quota{{Tenant: "a", Max: 7}, {Tenant: "b", Max: runtime.MaxSlidingLog}} {
		if err := r.Export(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	if len(lim.reqs) != 2 {
		t.Fatalf("the limiter was asked about %d requests; want 2", len(lim.reqs))
	}
	for i, want := range []int{7, runtime.MaxSlidingLog} {
		l := lim.reqs[i].Limit
		if l.Max != want || l.Name != here+"Reports.Export" {
			t.Errorf("request %d has limit %#v; want %sReports.Export with Max %d", i, l, here, want)
		}
	}
	if limitReportsExport.Max != 0 || limitReportsExport.Mode != runtime.ModeShadow {
		t.Errorf("limitReportsExport = %#v; want no Max (a call must not change the package's limit) and runtime.ModeShadow", limitReportsExport)
	}
	// A Max beyond what the limit's algorithm takes, a sliding log's here,
	// is the limiter's error, even in shadow mode.
	if err := r.Export(context.Background(), Quota{Tenant: "c", Max: runtime.MaxSlidingLog + 1}); err == nil || errors.Is(err, runtime.ErrLimited) {
		t.Errorf("Export with Max %d returned %v; want the limiter's error", runtime.MaxSlidingLog+1, err)
	}
}

// TestPlansShadowLimitNeverDenies: Export's limit is in shadow mode, so
// calls beyond its Max go through, and an observer of the limiter sees
// them as shadow-limited.
func TestPlansShadowLimitNeverDenies(t *testing.T) {
	obs := &resultCounter{}
	lim := runtime.Operate(memlimit.New(), runtime.WithObserver(obs))
	calls := &reportCalls{}
	r := NewRateLimitedReports(calls, lim)
	q := Quota{Tenant: "a", Max: 2}
	for range 5 {
		if err := r.Export(context.Background(), q); err != nil {
			t.Fatalf("a shadow limit denied a call: %v", err)
		}
	}
	if calls.export != 5 {
		t.Errorf("%d calls reached Export; want 5", calls.export)
	}
	want := map[runtime.Result]int{runtime.ResultAllowed: 2, runtime.ResultShadowLimited: 3}
	if !maps.Equal(obs.n, want) {
		t.Errorf("observed %v; want %v", obs.n, want)
	}
}

// resultCounter counts the results it observes.
type resultCounter struct {
	mu sync.Mutex
	n  map[runtime.Result]int
}

func (c *resultCounter) Observe(_ context.Context, ev runtime.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[runtime.Result]int{}
	}
	c.n[ev.Result]++
}
