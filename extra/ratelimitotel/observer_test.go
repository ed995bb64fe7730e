package ratelimitotel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitotel"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// setup returns an Observer recording into a real SDK MeterProvider and the
// ManualReader that collects from it.
func setup(t testing.TB, opts ...ratelimitotel.Option) (*ratelimitotel.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	return setupProvider(t, nil, opts...)
}

// setupProvider is setup with options for the MeterProvider.
func setupProvider(t testing.TB, mpOpts []sdkmetric.Option, opts ...ratelimitotel.Option) (*ratelimitotel.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(append(mpOpts, sdkmetric.WithReader(reader))...)
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := ratelimitotel.New(append([]ratelimitotel.Option{ratelimitotel.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return obs, reader
}

// collect returns the metrics of the observer's scope by name.
func collect(t testing.TB, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ratelimitotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, ratelimitotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

func attrs(limit, result, source string, extra ...attribute.KeyValue) attribute.Set {
	kvs := []attribute.KeyValue{
		ratelimitotel.LimitNameKey.String(limit),
		ratelimitotel.ResultKey.String(result),
	}
	if source != "" {
		kvs = append(kvs, ratelimitotel.SourceKey.String(source))
	}
	return attribute.NewSet(append(kvs, extra...)...)
}

func counter(name, desc string, points ...metricdata.DataPoint[int64]) metricdata.Metrics {
	return metricdata.Metrics{
		Name:        name,
		Description: desc,
		Unit:        "{decision}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints:  points,
		},
	}
}

var defaultBounds = []float64{
	100e-9, 250e-9, 500e-9, 1e-6, 2.5e-6, 5e-6, 10e-6, 25e-6, 50e-6,
	100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3, 1,
}

// histPoint is the data point of latencies recorded with set, bucketed by
// bounds.
func histPoint(set attribute.Set, bounds []float64, latencies ...time.Duration) metricdata.HistogramDataPoint[float64] {
	p := metricdata.HistogramDataPoint[float64]{
		Attributes:   set,
		Count:        uint64(len(latencies)),
		Bounds:       bounds,
		BucketCounts: make([]uint64, len(bounds)+1),
	}
	for i, l := range latencies {
		s := l.Seconds()
		p.Sum += s
		if m, _ := p.Min.Value(); i == 0 || s < m {
			p.Min = metricdata.NewExtrema(s)
		}
		if m, _ := p.Max.Value(); i == 0 || s > m {
			p.Max = metricdata.NewExtrema(s)
		}
		b := len(bounds)
		for j, bound := range bounds {
			if s <= bound {
				b = j
				break
			}
		}
		p.BucketCounts[b]++
	}
	return p
}

const (
	decisionsDesc = "Decisions made by rate limits, one for each limit of each call."
	nearDesc      = "Admitted decisions that left at most a fifth of the limit's capacity."
	durationDesc  = "Time the calls that a rate limit took part in took to decide."
)

// TestObserve records events of every result and checks every instrument
// as the SDK exports it: names, units, descriptions, attributes, counts
// and histogram buckets.
func TestObserve(t *testing.T) {
	obs, reader := setup(t)
	ctx := context.Background()
	a := runtime.Limit{Name: "A", Window: time.Minute, Max: 10}
	b := runtime.Limit{Name: "B", Window: time.Second, Max: 5, Mode: runtime.ModeShadow}
	events := []runtime.Event{
		{Limit: a, Result: runtime.ResultAllowed, Source: runtime.SourceStore, Remaining: 9, Cost: 1, Latency: 300 * time.Nanosecond},
		{Limit: a, Result: runtime.ResultAllowed, Source: runtime.SourceStore, Remaining: 2, Cost: 1, Latency: 2 * time.Millisecond},
		{Limit: a, Result: runtime.ResultLimited, Source: runtime.SourceDenyCache, Remaining: 0, Cost: 1, Latency: 80 * time.Nanosecond},
		{Limit: b, Result: runtime.ResultShadowLimited, Source: runtime.SourceStore, Remaining: 0, Cost: 1, Latency: 40 * time.Microsecond},
		{Limit: b, Result: runtime.ResultAllowed, Source: runtime.SourceFallback, Remaining: 4, Cost: 1, Latency: 3 * time.Second},
		{Limit: a, Result: runtime.ResultAllowed, Source: runtime.SourceFailOpen, Remaining: 0, Cost: 1, Latency: 100 * time.Millisecond},
		{Limit: a, Result: runtime.ResultError, Source: runtime.SourceDenyCache, Cost: 1, Latency: 150 * time.Millisecond,
			Err: fmt.Errorf("redis: %w", errors.Join(runtime.ErrUnavailable, context.DeadlineExceeded))},
		{Limit: a, Result: runtime.ResultError, Cost: 1, Latency: time.Microsecond, Err: errors.New("boom")},
	}
	for _, ev := range events {
		obs.Observe(ctx, ev)
	}

	allowedStore := attrs("A", "allowed", "store")
	limitedCache := attrs("A", "limited", "deny-cache")
	shadowStore := attrs("B", "shadow-limited", "store")
	allowedFallback := attrs("B", "allowed", "fallback")
	failOpen := attrs("A", "allowed", "fail-open")
	timeout := attrs("A", "error", "", ratelimitotel.ErrorTypeKey.String("timeout"))
	other := attrs("A", "error", "", ratelimitotel.ErrorTypeKey.String("_OTHER"))

	got := collect(t, reader)
	if len(got) != 3 {
		t.Errorf("got %d instruments, want 3: %v", len(got), got)
	}
	opts := []metricdatatest.Option{metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars()}
	metricdatatest.AssertEqual(t, counter(ratelimitotel.DecisionsName, decisionsDesc,
		metricdata.DataPoint[int64]{Attributes: allowedStore, Value: 2},
		metricdata.DataPoint[int64]{Attributes: limitedCache, Value: 1},
		metricdata.DataPoint[int64]{Attributes: shadowStore, Value: 1},
		metricdata.DataPoint[int64]{Attributes: allowedFallback, Value: 1},
		metricdata.DataPoint[int64]{Attributes: failOpen, Value: 1},
		metricdata.DataPoint[int64]{Attributes: timeout, Value: 1},
		metricdata.DataPoint[int64]{Attributes: other, Value: 1},
	), got[ratelimitotel.DecisionsName], opts...)
	// Near the limit: the admissions with remaining 2 of 10 and with 0
	// (fail-open); never a denial, a shadow denial or an error.
	metricdatatest.AssertEqual(t, counter(ratelimitotel.NearLimitDecisionsName, nearDesc,
		metricdata.DataPoint[int64]{Attributes: allowedStore, Value: 1},
		metricdata.DataPoint[int64]{Attributes: failOpen, Value: 1},
	), got[ratelimitotel.NearLimitDecisionsName], opts...)
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        ratelimitotel.DecisionDurationName,
		Description: durationDesc,
		Unit:        "s",
		Data: metricdata.Histogram[float64]{
			Temporality: metricdata.CumulativeTemporality,
			DataPoints: []metricdata.HistogramDataPoint[float64]{
				histPoint(allowedStore, defaultBounds, 300*time.Nanosecond, 2*time.Millisecond),
				histPoint(limitedCache, defaultBounds, 80*time.Nanosecond),
				histPoint(shadowStore, defaultBounds, 40*time.Microsecond),
				histPoint(allowedFallback, defaultBounds, 3*time.Second),
				histPoint(failOpen, defaultBounds, 100*time.Millisecond),
				histPoint(timeout, defaultBounds, 150*time.Millisecond),
				histPoint(other, defaultBounds, time.Microsecond),
			},
		},
	}, got[ratelimitotel.DecisionDurationName], opts...)

	// The buckets as a person reads them: 80ns in the first, 3s in the
	// overflow bucket, 100ms on its boundary.
	h := got[ratelimitotel.DecisionDurationName].Data.(metricdata.Histogram[float64])
	for _, p := range h.DataPoints {
		switch {
		case p.Attributes.Equals(&limitedCache) && p.BucketCounts[0] != 1,
			p.Attributes.Equals(&allowedFallback) && p.BucketCounts[len(p.Bounds)] != 1,
			p.Attributes.Equals(&failOpen) && p.BucketCounts[18] != 1:
			t.Errorf("%v: buckets %v", p.Attributes.Encoded(attribute.DefaultEncoder()), p.BucketCounts)
		}
	}
}

// TestErrorType checks the error.type each kind of error is recorded with.
func TestErrorType(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{context.DeadlineExceeded, "timeout"},
		{fmt.Errorf("wait: %w", context.Canceled), "canceled"},
		{fmt.Errorf("ratelimit: bad: %w", runtime.ErrInvalidCost), "invalid_cost"},
		{fmt.Errorf("redis down: %w", runtime.ErrUnavailable), "unavailable"},
		{errors.New("something else"), "_OTHER"},
		{nil, "_OTHER"},
	}
	for _, c := range cases {
		obs, reader := setup(t)
		obs.Observe(context.Background(), runtime.Event{
			Limit: runtime.Limit{Name: "L", Window: time.Second, Max: 1}, Result: runtime.ResultError, Err: c.err})
		d := collect(t, reader)[ratelimitotel.DecisionsName].Data.(metricdata.Sum[int64])
		if len(d.DataPoints) != 1 {
			t.Fatalf("%v: %d data points", c.err, len(d.DataPoints))
		}
		want := attrs("L", "error", "", ratelimitotel.ErrorTypeKey.String(c.want))
		if got := d.DataPoints[0].Attributes; !got.Equals(&want) {
			t.Errorf("%v: attributes %v, want %v", c.err,
				got.Encoded(attribute.DefaultEncoder()), want.Encoded(attribute.DefaultEncoder()))
		}
	}
}

// TestLabelAttribute checks that labels are recorded only under the
// chosen key, and not at all without WithLabelAttribute.
func TestLabelAttribute(t *testing.T) {
	l := runtime.Limit{Name: "L", Window: time.Second, Max: 100}
	events := []runtime.Event{
		{Limit: l, Label: "free", Remaining: 50},
		{Limit: l, Label: "free", Remaining: 50},
		{Limit: l, Label: "pro", Remaining: 50},
		{Limit: l, Remaining: 50},
	}

	obs, reader := setup(t, ratelimitotel.WithLabelAttribute("app.plan"))
	for _, ev := range events {
		obs.Observe(context.Background(), ev)
	}
	plan := attribute.Key("app.plan")
	metricdatatest.AssertEqual(t, counter(ratelimitotel.DecisionsName, decisionsDesc,
		metricdata.DataPoint[int64]{Attributes: attrs("L", "allowed", "store", plan.String("free")), Value: 2},
		metricdata.DataPoint[int64]{Attributes: attrs("L", "allowed", "store", plan.String("pro")), Value: 1},
		metricdata.DataPoint[int64]{Attributes: attrs("L", "allowed", "store"), Value: 1},
	), collect(t, reader)[ratelimitotel.DecisionsName], metricdatatest.IgnoreTimestamp())

	obs, reader = setup(t)
	for _, ev := range events {
		obs.Observe(context.Background(), ev)
	}
	metricdatatest.AssertEqual(t, counter(ratelimitotel.DecisionsName, decisionsDesc,
		metricdata.DataPoint[int64]{Attributes: attrs("L", "allowed", "store"), Value: 4},
	), collect(t, reader)[ratelimitotel.DecisionsName], metricdatatest.IgnoreTimestamp())
}

// TestDurationBoundaries checks that WithDurationBoundaries replaces the
// advised buckets.
func TestDurationBoundaries(t *testing.T) {
	obs, reader := setup(t, ratelimitotel.WithDurationBoundaries(0.001, 0.01))
	l := runtime.Limit{Name: "L", Window: time.Second, Max: 1}
	obs.Observe(context.Background(), runtime.Event{Limit: l, Latency: 5 * time.Millisecond})
	h := collect(t, reader)[ratelimitotel.DecisionDurationName].Data.(metricdata.Histogram[float64])
	metricdatatest.AssertEqual(t, histPoint(attrs("L", "allowed", "store"), []float64{0.001, 0.01}, 5*time.Millisecond),
		h.DataPoints[0], metricdatatest.IgnoreTimestamp())
}

// TestGlobalMeterProvider checks that New without WithMeterProvider uses
// the global MeterProvider.
func TestGlobalMeterProvider(t *testing.T) {
	prev := otel.GetMeterProvider()
	t.Cleanup(func() { otel.SetMeterProvider(prev) })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	otel.SetMeterProvider(mp)

	obs, err := ratelimitotel.New()
	if err != nil {
		t.Fatal(err)
	}
	obs.Observe(context.Background(), runtime.Event{Limit: runtime.Limit{Name: "L", Window: time.Second, Max: 1}})
	metricdatatest.AssertEqual(t, counter(ratelimitotel.DecisionsName, decisionsDesc,
		metricdata.DataPoint[int64]{Attributes: attrs("L", "allowed", "store"), Value: 1},
	), collect(t, reader)[ratelimitotel.DecisionsName], metricdatatest.IgnoreTimestamp())
}

// TestManyAttributeSets observes more combinations than the Observer
// caches: the ones past the bound are recorded all the same. (The SDK's
// own default cardinality limit, 2000 series an instrument, is raised.)
func TestManyAttributeSets(t *testing.T) {
	obs, reader := setupProvider(t, []sdkmetric.Option{sdkmetric.WithCardinalityLimit(10000)},
		ratelimitotel.WithLabelAttribute("label"))
	l := runtime.Limit{Name: "L", Window: time.Second, Max: 100}
	const n = 5000
	for round := 0; round < 2; round++ {
		for i := range n {
			obs.Observe(context.Background(), runtime.Event{Limit: l, Label: fmt.Sprint(i), Remaining: 99})
		}
	}
	d := collect(t, reader)[ratelimitotel.DecisionsName].Data.(metricdata.Sum[int64])
	if len(d.DataPoints) != n {
		t.Fatalf("%d data points, want %d", len(d.DataPoints), n)
	}
	for _, p := range d.DataPoints {
		if p.Value != 2 {
			v, _ := p.Attributes.Value("label")
			t.Fatalf("label %v counted %d times, want 2", v.Emit(), p.Value)
		}
	}
}

// TestConcurrentObserve observes from many goroutines at once, new and
// cached attribute sets alike; run it with -race.
func TestConcurrentObserve(t *testing.T) {
	obs, reader := setup(t, ratelimitotel.WithLabelAttribute("label"))
	const goroutines, each = 8, 500
	limits := []runtime.Limit{
		{Name: "A", Window: time.Second, Max: 10},
		{Name: "B", Window: time.Second, Max: 10},
		{Name: "C", Window: time.Second, Max: 10},
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				obs.Observe(context.Background(), runtime.Event{
					Limit:     limits[(g+i)%len(limits)],
					Label:     fmt.Sprint(i % 4),
					Result:    runtime.Result(i % 3),
					Source:    runtime.SourceStore,
					Remaining: i % 10,
					Latency:   time.Duration(i) * time.Microsecond,
				})
			}
		}()
	}
	wg.Wait()
	got := collect(t, reader)
	var decisions, near int64
	for _, p := range got[ratelimitotel.DecisionsName].Data.(metricdata.Sum[int64]).DataPoints {
		decisions += p.Value
	}
	for _, p := range got[ratelimitotel.NearLimitDecisionsName].Data.(metricdata.Sum[int64]).DataPoints {
		near += p.Value
	}
	var recorded uint64
	for _, p := range got[ratelimitotel.DecisionDurationName].Data.(metricdata.Histogram[float64]).DataPoints {
		recorded += p.Count
	}
	if decisions != goroutines*each || recorded != goroutines*each {
		t.Errorf("counted %d decisions and %d durations, want %d", decisions, recorded, goroutines*each)
	}
	// Admissions (Result 0) with remaining 0, 1 or 2 of 10 are near the
	// limit.
	var nearEach int64
	for i := range each {
		if i%3 == 0 && i%10 <= 2 {
			nearEach++
		}
	}
	if want := goroutines * nearEach; near != want {
		t.Errorf("counted %d near-limit decisions, want %d", near, want)
	}
	if n := len(got[ratelimitotel.DecisionsName].Data.(metricdata.Sum[int64]).DataPoints); n != 3*4*3 {
		t.Errorf("%d series, want %d", n, 3*4*3)
	}
}
