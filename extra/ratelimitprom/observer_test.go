package ratelimitprom_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

var (
	perMinute = runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 5}
	perDay    = runtime.Limit{Name: "Notifier.SendCodeDaily", Window: 24 * time.Hour, Max: 20}
)

// register returns a new Observer registered with a new pedantic registry,
// which checks that what it collects matches what it describes.
func register(t *testing.T, opts ...ratelimitprom.Option) (*ratelimitprom.Observer, *prometheus.Registry) {
	t.Helper()
	obs := ratelimitprom.NewObserver(opts...)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(obs); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return obs, reg
}

// gatherCompare compares what reg gathers of the named metrics with the
// text exposition expected.
func gatherCompare(t *testing.T, reg *prometheus.Registry, expected string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), names...); err != nil {
		t.Error(err)
	}
}

// TestObserveLabelValues checks the labels of every result and source, and
// that an error's source is "none" whatever Event.Source says.
func TestObserveLabelValues(t *testing.T) {
	obs, reg := register(t)
	ctx := context.Background()
	for _, ev := range []runtime.Event{
		{Limit: perMinute, Result: runtime.ResultAllowed, Source: runtime.SourceStore, Remaining: 4},
		{Limit: perMinute, Result: runtime.ResultAllowed, Source: runtime.SourceStore, Remaining: 3},
		{Limit: perMinute, Result: runtime.ResultLimited, Source: runtime.SourceDenyCache},
		{Limit: perMinute, Result: runtime.ResultAllowed, Source: runtime.SourceFallback, Remaining: 4},
		{Limit: perMinute, Result: runtime.ResultAllowed, Source: runtime.SourceFailOpen, Remaining: 5},
		{Limit: perDay, Result: runtime.ResultShadowLimited, Source: runtime.SourceStore},
		{Limit: perDay, Result: runtime.ResultError, Source: runtime.SourceDenyCache, Err: errors.New("connection refused")},
		{Limit: perDay, Result: runtime.ResultError, Err: errors.New("connection refused")},
	} {
		ev.Cost = 1
		obs.Observe(ctx, ev)
	}
	gatherCompare(t, reg, `
# HELP ratelimit_decisions_total Rate-limit decisions, one per limit of each call, by limit, result and source (none for errors).
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{limit="Notifier.SendCode",result="allowed",source="fail-open"} 1
ratelimit_decisions_total{limit="Notifier.SendCode",result="allowed",source="fallback"} 1
ratelimit_decisions_total{limit="Notifier.SendCode",result="allowed",source="store"} 2
ratelimit_decisions_total{limit="Notifier.SendCode",result="limited",source="deny-cache"} 1
ratelimit_decisions_total{limit="Notifier.SendCodeDaily",result="error",source="none"} 2
ratelimit_decisions_total{limit="Notifier.SendCodeDaily",result="shadow-limited",source="store"} 1
`, "ratelimit_decisions_total")
}

// TestNearLimit checks which events ratelimit_near_limit_total counts:
// admitted hits with a fifth of the capacity left or less, never denials,
// shadow denials or errors; and that a limit's series exists, at 0, once it
// is observed.
func TestNearLimit(t *testing.T) {
	obs, reg := register(t)
	ctx := context.Background()
	bucket := runtime.Limit{Name: "API.Burst", Window: time.Second, Max: 10, Algorithm: runtime.TokenBucket, Burst: 50}
	for _, ev := range []runtime.Event{
		{Limit: perMinute, Result: runtime.ResultAllowed, Remaining: 2},          // 2*5 > 5: not near
		{Limit: perMinute, Result: runtime.ResultAllowed, Remaining: 1},          // 1*5 <= 5: near
		{Limit: perMinute, Result: runtime.ResultAllowed, Remaining: 0},          // near
		{Limit: perMinute, Result: runtime.ResultLimited, Remaining: 0},          // over, not near
		{Limit: perMinute, Result: runtime.ResultShadowLimited, Remaining: 0},    // over, not near
		{Limit: perMinute, Result: runtime.ResultError, Err: errors.New("down")}, // never near
		{Limit: bucket, Result: runtime.ResultAllowed, Remaining: 10},            // capacity is Burst 50: near
		{Limit: bucket, Result: runtime.ResultAllowed, Remaining: 11},            // not near
		{Limit: perDay, Result: runtime.ResultAllowed, Remaining: 19},            // not near
	} {
		obs.Observe(ctx, ev)
	}
	gatherCompare(t, reg, `
# HELP ratelimit_near_limit_total Admitted rate-limit decisions that left at most a fifth of the limit's capacity.
# TYPE ratelimit_near_limit_total counter
ratelimit_near_limit_total{limit="API.Burst"} 1
ratelimit_near_limit_total{limit="Notifier.SendCode"} 2
ratelimit_near_limit_total{limit="Notifier.SendCodeDaily"} 0
`, "ratelimit_near_limit_total")
}

// TestDurationHistogram checks the buckets, sum and count of the latency
// histogram, errors included, one histogram per limit.
func TestDurationHistogram(t *testing.T) {
	obs, reg := register(t, ratelimitprom.WithBuckets([]float64{1e-6, 1e-3, 0.1}))
	ctx := context.Background()
	for _, ev := range []runtime.Event{
		{Limit: perMinute, Result: runtime.ResultLimited, Source: runtime.SourceDenyCache, Latency: 250 * time.Nanosecond},
		{Limit: perMinute, Result: runtime.ResultAllowed, Latency: 500 * time.Microsecond},
		{Limit: perMinute, Result: runtime.ResultAllowed, Latency: time.Millisecond}, // on a bound: in its bucket
		{Limit: perMinute, Result: runtime.ResultError, Latency: 250 * time.Millisecond},
		{Limit: perDay, Result: runtime.ResultAllowed, Latency: 2 * time.Millisecond},
	} {
		obs.Observe(ctx, ev)
	}
	gatherCompare(t, reg, `
# HELP ratelimit_decision_duration_seconds How long rate-limit calls took to decide, all their limits together, observed once per limit of each call.
# TYPE ratelimit_decision_duration_seconds histogram
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCode",le="1e-06"} 1
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCode",le="0.001"} 3
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCode",le="0.1"} 3
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCode",le="+Inf"} 4
ratelimit_decision_duration_seconds_sum{limit="Notifier.SendCode"} 0.25150025
ratelimit_decision_duration_seconds_count{limit="Notifier.SendCode"} 4
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCodeDaily",le="1e-06"} 0
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCodeDaily",le="0.001"} 0
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCodeDaily",le="0.1"} 1
ratelimit_decision_duration_seconds_bucket{limit="Notifier.SendCodeDaily",le="+Inf"} 1
ratelimit_decision_duration_seconds_sum{limit="Notifier.SendCodeDaily"} 0.002
ratelimit_decision_duration_seconds_count{limit="Notifier.SendCodeDaily"} 1
`, "ratelimit_decision_duration_seconds")
}

// TestDefaultBuckets checks that the default histogram has DefaultBuckets
// and that they span 100ns to at least 100ms.
func TestDefaultBuckets(t *testing.T) {
	obs, reg := register(t)
	obs.Observe(context.Background(), runtime.Event{Limit: perMinute, Latency: time.Microsecond})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, mf := range mfs {
		if mf.GetName() == "ratelimit_decision_duration_seconds" {
			for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
				got = append(got, b.GetUpperBound())
			}
		}
	}
	if len(got) != len(ratelimitprom.DefaultBuckets) {
		t.Fatalf("histogram has buckets %v, want DefaultBuckets %v", got, ratelimitprom.DefaultBuckets)
	}
	for i := range got {
		if got[i] != ratelimitprom.DefaultBuckets[i] {
			t.Fatalf("histogram has buckets %v, want DefaultBuckets %v", got, ratelimitprom.DefaultBuckets)
		}
	}
	if first, last := got[0], got[len(got)-1]; first > 100e-9 || last < 100e-3 {
		t.Errorf("DefaultBuckets span %gs to %gs, want 100ns to at least 100ms", first, last)
	}
}

// TestOperate decides through runtime.Operate and a memlimit.Limiter: a call
// with two limits is one event per limit, each timed with the call's
// latency, so each limit's histogram counts the call.
func TestOperate(t *testing.T) {
	obs, reg := register(t)
	lim := runtime.Operate(memlimit.New(), runtime.WithObserver(obs))
	ctx := context.Background()
	twoPerMinute := runtime.Limit{Name: "Login.PerUser", Window: time.Minute, Max: 2}
	shadow := runtime.Limit{Name: "Login.PerUserDaily", Window: 24 * time.Hour, Max: 1, Mode: runtime.ModeShadow}
	off := runtime.Limit{Name: "Login.Off", Window: time.Minute, Max: 1, Mode: runtime.ModeOff}
	var denied int
	for range 3 {
		err := runtime.Enforce(ctx, lim,
			runtime.Request{Limit: twoPerMinute, Key: "alice"},
			runtime.Request{Limit: shadow, Key: "alice"},
			runtime.Request{Limit: off, Key: "alice"})
		if err != nil {
			denied++
		}
	}
	if denied != 1 {
		t.Fatalf("%d of 3 calls denied, want 1", denied)
	}
	invalid := runtime.Limit{Name: "Login.Invalid", Window: time.Minute} // Max 0
	if err := runtime.Enforce(ctx, lim, runtime.Request{Limit: invalid, Key: "alice"}); err == nil {
		t.Fatal("a limit with Max 0 decided without error")
	}
	// Call 1: Login.PerUser allowed with 1 left (1*5 > 2: not near);
	// Login.PerUserDaily allowed with 0 left (near). Call 2: Login.PerUser
	// allowed with 0 left (near); Login.PerUserDaily shadow-limited (over,
	// not near). Call 3: Login.PerUser limited, Login.PerUserDaily
	// shadow-limited (neither near). Login.Off is never observed.
	gatherCompare(t, reg, `
# HELP ratelimit_decisions_total Rate-limit decisions, one per limit of each call, by limit, result and source (none for errors).
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{limit="Login.Invalid",result="error",source="none"} 1
ratelimit_decisions_total{limit="Login.PerUser",result="allowed",source="store"} 2
ratelimit_decisions_total{limit="Login.PerUser",result="limited",source="store"} 1
ratelimit_decisions_total{limit="Login.PerUserDaily",result="allowed",source="store"} 1
ratelimit_decisions_total{limit="Login.PerUserDaily",result="shadow-limited",source="store"} 2
# HELP ratelimit_near_limit_total Admitted rate-limit decisions that left at most a fifth of the limit's capacity.
# TYPE ratelimit_near_limit_total counter
ratelimit_near_limit_total{limit="Login.Invalid"} 0
ratelimit_near_limit_total{limit="Login.PerUser"} 1
ratelimit_near_limit_total{limit="Login.PerUserDaily"} 1
`, "ratelimit_decisions_total", "ratelimit_near_limit_total")

	// Each limit's histogram counts every call that included it.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "ratelimit_decision_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			counts[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			if m.GetHistogram().GetSampleSum() <= 0 {
				t.Errorf("histogram of %s has sum %g, want > 0", m.GetLabel()[0].GetValue(), m.GetHistogram().GetSampleSum())
			}
		}
	}
	want := map[string]uint64{"Login.PerUser": 3, "Login.PerUserDaily": 3, "Login.Invalid": 1}
	if len(counts) != len(want) {
		t.Errorf("histograms %v, want %v", counts, want)
	}
	for name, n := range want {
		if counts[name] != n {
			t.Errorf("histogram of %s counts %d, want %d", name, counts[name], n)
		}
	}
}

// TestLabel checks WithLabel: the label on both counters, fed by
// runtime.WithLabel, and not on the histogram.
func TestLabel(t *testing.T) {
	obs, reg := register(t, ratelimitprom.WithLabel("plan"))
	lim := runtime.Operate(memlimit.New(),
		runtime.WithObserver(obs),
		runtime.WithLabel(func(_ context.Context, r runtime.Request) string {
			if strings.HasPrefix(r.Key, "pro:") {
				return "pro"
			}
			return "free"
		}))
	ctx := context.Background()
	limit := runtime.Limit{Name: "Export.Run", Window: time.Minute, Max: 1}
	for _, key := range []string{"free:1", "free:1", "pro:1", "free:2"} {
		_ = runtime.Enforce(ctx, lim, runtime.Request{Limit: limit, Key: key})
	}
	obs.Observe(ctx, runtime.Event{Limit: limit, Result: runtime.ResultAllowed, Remaining: 1}) // no label
	gatherCompare(t, reg, `
# HELP ratelimit_decisions_total Rate-limit decisions, one per limit of each call, by limit, result and source (none for errors).
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{limit="Export.Run",plan="",result="allowed",source="store"} 1
ratelimit_decisions_total{limit="Export.Run",plan="free",result="allowed",source="store"} 2
ratelimit_decisions_total{limit="Export.Run",plan="free",result="limited",source="store"} 1
ratelimit_decisions_total{limit="Export.Run",plan="pro",result="allowed",source="store"} 1
# HELP ratelimit_near_limit_total Admitted rate-limit decisions that left at most a fifth of the limit's capacity.
# TYPE ratelimit_near_limit_total counter
ratelimit_near_limit_total{limit="Export.Run",plan=""} 0
ratelimit_near_limit_total{limit="Export.Run",plan="free"} 2
ratelimit_near_limit_total{limit="Export.Run",plan="pro"} 1
`, "ratelimit_decisions_total", "ratelimit_near_limit_total")
	if n := testutil.CollectAndCount(obs, "ratelimit_decision_duration_seconds"); n != 1 {
		t.Errorf("%d duration histograms, want 1: the label does not split it", n)
	}
}

// TestLabelIgnoredWithout checks that Event.Label is ignored without
// WithLabel: events that differ only by it count in one series.
func TestLabelIgnoredWithout(t *testing.T) {
	obs, _ := register(t)
	for _, label := range []string{"free", "pro", ""} {
		obs.Observe(context.Background(), runtime.Event{Limit: perMinute, Label: label, Remaining: 4})
	}
	err := testutil.CollectAndCompare(obs, strings.NewReader(`
# HELP ratelimit_decisions_total Rate-limit decisions, one per limit of each call, by limit, result and source (none for errors).
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{limit="Notifier.SendCode",result="allowed",source="store"} 3
`), "ratelimit_decisions_total")
	if err != nil {
		t.Error(err)
	}
}

// TestNamespace checks WithNamespace's names, and that an empty namespace
// leaves the names without a prefix.
func TestNamespace(t *testing.T) {
	for ns, want := range map[string][]string{
		"myapp": {"myapp_decision_duration_seconds", "myapp_decisions_total", "myapp_near_limit_total"},
		"":      {"decision_duration_seconds", "decisions_total", "near_limit_total"},
	} {
		obs, reg := register(t, ratelimitprom.WithNamespace(ns))
		obs.Observe(context.Background(), runtime.Event{Limit: perMinute})
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, mf := range mfs {
			got = append(got, mf.GetName())
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("WithNamespace(%q) exports %v, want %v", ns, got, want)
		}
	}
}

// TestRegisterRejects checks that a label name that is reserved, invalid
// or taken, or an invalid namespace, makes registration fail, as
// documented.
func TestRegisterRejects(t *testing.T) {
	for name, opt := range map[string]ratelimitprom.Option{
		"label limit":         ratelimitprom.WithLabel("limit"),
		"label result":        ratelimitprom.WithLabel("result"),
		"label source":        ratelimitprom.WithLabel("source"),
		"label reserved":      ratelimitprom.WithLabel("__plan"),
		"label not UTF-8":     ratelimitprom.WithLabel("plan\xff"),
		"namespace not UTF-8": ratelimitprom.WithNamespace("app\xff"),
	} {
		if err := prometheus.NewRegistry().Register(ratelimitprom.NewObserver(opt)); err == nil {
			t.Errorf("%s: Register succeeded, want an error", name)
		}
	}
}

// TestWithBucketsPanics checks that bounds that do not increase panic in
// NewObserver, as documented.
func TestWithBucketsPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewObserver with decreasing buckets did not panic")
		}
	}()
	ratelimitprom.NewObserver(ratelimitprom.WithBuckets([]float64{1, 0.5}))
}

// TestConcurrent observes from many goroutines, new series and known ones
// at once, while the registry gathers, and checks every event counted.
// Run it with -race.
func TestConcurrent(t *testing.T) {
	obs, reg := register(t, ratelimitprom.WithLabel("plan"))
	const goroutines, perG = 8, 2000
	limits := []runtime.Limit{perMinute, perDay, {Name: "API.Search", Window: time.Second, Max: 100}}
	plans := []string{"free", "pro", "enterprise"}
	results := []runtime.Result{runtime.ResultAllowed, runtime.ResultLimited, runtime.ResultShadowLimited, runtime.ResultError}
	sources := []runtime.Source{runtime.SourceStore, runtime.SourceDenyCache, runtime.SourceFallback, runtime.SourceFailOpen, runtime.SourceLease}
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	gathered := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				gathered <- nil
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				gathered <- err
				return
			}
		}
	}()
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				n := g*perG + i
				obs.Observe(ctx, runtime.Event{
					Limit:   limits[n%len(limits)],
					Label:   plans[n/3%len(plans)],
					Result:  results[n/9%len(results)],
					Source:  sources[n/36%len(sources)],
					Latency: time.Duration(n%1000) * time.Microsecond,
				})
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-gathered; err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var decisions, observed float64
	series := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "ratelimit_decisions_total":
				decisions += m.GetCounter().GetValue()
				series++
			case "ratelimit_decision_duration_seconds":
				observed += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	if want := float64(goroutines * perG); decisions != want || observed != want {
		t.Errorf("counted %g decisions and %g durations, want %g of each", decisions, observed, want)
	}
	// Errors of any source share the source "none": 3 limits x 3 plans x
	// (3 results x 5 sources + 1).
	if want := 3 * 3 * (3*len(sources) + 1); series != want {
		t.Errorf("%d series of ratelimit_decisions_total, want %d", series, want)
	}
}

// TestPermitsInUse: the gauge follows a concurrency limit's admissions and
// releases, leaves out calls admitted without a decision, and rate limits
// have none.
func TestPermitsInUse(t *testing.T) {
	obs, reg := register(t)
	exports := runtime.Limit{Name: "Exports", Window: time.Minute, Max: 2, Algorithm: runtime.Concurrency}
	ctx := context.Background()
	for _, ev := range []runtime.Event{
		{Limit: exports, Result: runtime.ResultAllowed},
		{Limit: exports, Result: runtime.ResultAllowed},
		{Limit: exports, Result: runtime.ResultShadowLimited},
		{Limit: exports, Result: runtime.ResultReleased},
		{Limit: exports, Result: runtime.ResultLimited},
		{Limit: exports, Result: runtime.ResultAllowed, Source: runtime.SourceFailOpen},
		{Limit: exports, Result: runtime.ResultReleased, Source: runtime.SourceFailOpen},
		{Limit: perMinute, Result: runtime.ResultAllowed},
	} {
		obs.Observe(ctx, ev)
	}
	gatherCompare(t, reg, `
# HELP ratelimit_permits_in_use Permits of concurrency limits that this instance's calls hold.
# TYPE ratelimit_permits_in_use gauge
ratelimit_permits_in_use{limit="Exports"} 2
`, "ratelimit_permits_in_use")
}
