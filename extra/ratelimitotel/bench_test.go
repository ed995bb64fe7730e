package ratelimitotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitotel"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// benchEvents are the steady-state events the benchmarks cycle through:
// two limits, admissions near and far from the limit, a denial and a
// shadow denial, so that every instrument records.
var benchEvents = []runtime.Event{
	{Limit: runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 10}, Label: "free",
		Result: runtime.ResultAllowed, Remaining: 8, Cost: 1, Latency: 400 * time.Nanosecond},
	{Limit: runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 10}, Label: "pro",
		Result: runtime.ResultAllowed, Remaining: 1, Cost: 1, Latency: 300 * time.Microsecond},
	{Limit: runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 10}, Label: "free",
		Result: runtime.ResultLimited, Source: runtime.SourceDenyCache, Cost: 1, Latency: 200 * time.Nanosecond},
	{Limit: runtime.Limit{Name: "API.Search", Window: time.Second, Max: 100, Mode: runtime.ModeShadow}, Label: "pro",
		Result: runtime.ResultShadowLimited, Cost: 1, Latency: 250 * time.Microsecond},
}

func benchmarkObserve(b *testing.B, obs *ratelimitotel.Observer) {
	ctx := context.Background()
	for _, ev := range benchEvents { // warm the attribute-set cache
		obs.Observe(ctx, ev)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		obs.Observe(ctx, benchEvents[i%len(benchEvents)])
		i++
	}
}

// BenchmarkObserve measures one Observe in steady state: with the real
// SDK MeterProvider (a ManualReader, never collected during the run), with
// and without a label attribute, in parallel, and with the noop provider,
// which leaves only the Observer's own cost.
func BenchmarkObserve(b *testing.B) {
	b.Run("sdk", func(b *testing.B) {
		obs, _ := setup(b)
		benchmarkObserve(b, obs)
	})
	b.Run("sdk-label", func(b *testing.B) {
		obs, _ := setup(b, ratelimitotel.WithLabelAttribute("app.plan"))
		benchmarkObserve(b, obs)
	})
	b.Run("sdk-parallel", func(b *testing.B) {
		obs, _ := setup(b, ratelimitotel.WithLabelAttribute("app.plan"))
		ctx := context.Background()
		for _, ev := range benchEvents {
			obs.Observe(ctx, ev)
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				obs.Observe(ctx, benchEvents[i%len(benchEvents)])
				i++
			}
		})
	})
	b.Run("noop", func(b *testing.B) {
		obs, err := ratelimitotel.New(ratelimitotel.WithMeterProvider(noop.NewMeterProvider()),
			ratelimitotel.WithLabelAttribute("app.plan"))
		if err != nil {
			b.Fatal(err)
		}
		benchmarkObserve(b, obs)
	})
}

// BenchmarkOperate measures a whole decision of memlimit.Limiter through
// runtime.Operate, without an observer and with this one on the SDK, so
// that the difference is what the metrics add to a decision.
func BenchmarkOperate(b *testing.B) {
	l := runtime.Limit{Name: "Bench", Window: time.Second, Max: 1 << 30, Algorithm: runtime.GCRA}
	run := func(b *testing.B, lim runtime.Limiter) {
		ctx := context.Background()
		req := runtime.Request{Limit: l, Key: "k"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := lim.Decide(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("no-observer", func(b *testing.B) {
		run(b, runtime.Operate(memlimit.New()))
	})
	b.Run("sdk", func(b *testing.B) {
		obs, _ := setup(b)
		run(b, runtime.Operate(memlimit.New(), runtime.WithObserver(obs)))
	})
}
