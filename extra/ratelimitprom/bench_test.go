package ratelimitprom_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// benchEvents are the events the benchmarks observe in turn: a few limits,
// results and sources, as a service in its steady state sees them.
func benchEvents() []runtime.Event {
	limits := []runtime.Limit{
		{Name: "Notifier.SendCode", Window: time.Minute, Max: 5},
		{Name: "API.Search", Window: time.Second, Max: 100},
	}
	var evs []runtime.Event
	for _, l := range limits {
		evs = append(evs,
			runtime.Event{Limit: l, Label: "free", Result: runtime.ResultAllowed, Source: runtime.SourceStore, Cost: 1, Remaining: l.Max - 1, Latency: 400 * time.Microsecond},
			runtime.Event{Limit: l, Label: "pro", Result: runtime.ResultAllowed, Source: runtime.SourceStore, Cost: 1, Remaining: 0, Latency: 350 * time.Microsecond},
			runtime.Event{Limit: l, Label: "free", Result: runtime.ResultLimited, Source: runtime.SourceDenyCache, Cost: 1, Latency: 200 * time.Nanosecond},
			runtime.Event{Limit: l, Label: "free", Result: runtime.ResultError, Cost: 1, Latency: 100 * time.Millisecond},
		)
	}
	return evs
}

func benchmarkObserve(b *testing.B, opts ...ratelimitprom.Option) {
	obs := ratelimitprom.NewObserver(opts...)
	prometheus.NewPedanticRegistry().MustRegister(obs)
	ctx := context.Background()
	evs := benchEvents()
	for _, ev := range evs {
		obs.Observe(ctx, ev) // the first sight of each series allocates
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		obs.Observe(ctx, evs[i%len(evs)])
		i++
	}
}

// BenchmarkObserve measures Observe in its steady state: every series has
// been seen.
func BenchmarkObserve(b *testing.B) { benchmarkObserve(b) }

// BenchmarkObserveLabel is BenchmarkObserve with WithLabel.
func BenchmarkObserveLabel(b *testing.B) { benchmarkObserve(b, ratelimitprom.WithLabel("plan")) }

// BenchmarkObserveParallel measures Observe from GOMAXPROCS goroutines at
// once, all on the same series.
func BenchmarkObserveParallel(b *testing.B) {
	obs := ratelimitprom.NewObserver()
	ctx := context.Background()
	evs := benchEvents()
	for _, ev := range evs {
		obs.Observe(ctx, ev)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			obs.Observe(ctx, evs[i%len(evs)])
			i++
		}
	})
}

// BenchmarkWithLabelValues is the baseline that Observer's cache of
// children replaces: the same three updates through WithLabelValues, which
// looks the children up by hashing the label values on every call.
func BenchmarkWithLabelValues(b *testing.B) {
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "decisions_total", Help: "h"}, []string{"limit", "result", "source"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "decision_duration_seconds", Help: "h", Buckets: ratelimitprom.DefaultBuckets}, []string{"limit"})
	nearLimit := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "near_limit_total", Help: "h"}, []string{"limit"})
	evs := benchEvents()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ev := evs[i%len(evs)]
		i++
		source := ev.Source.String()
		if ev.Result == runtime.ResultError {
			source = ratelimitprom.SourceNone
		}
		decisions.WithLabelValues(ev.Limit.Name, ev.Result.String(), source).Inc()
		durations.WithLabelValues(ev.Limit.Name).Observe(ev.Latency.Seconds())
		if ev.NearLimit() {
			nearLimit.WithLabelValues(ev.Limit.Name).Inc()
		}
	}
}

type discardObserver struct{}

func (discardObserver) Observe(context.Context, runtime.Event) {}

// BenchmarkOperate measures an admitted decision of a memlimit.Limiter
// through runtime.Operate with an observer that does nothing and with an
// Observer: the difference is what exporting the decision costs.
func BenchmarkOperate(b *testing.B) {
	l := runtime.Limit{Name: "Bench.Operate", Window: time.Second, Max: 1 << 30, Algorithm: runtime.GCRA}
	for _, c := range []struct {
		name string
		obs  runtime.Observer
	}{
		{"discard", discardObserver{}},
		{"prometheus", ratelimitprom.NewObserver()},
	} {
		b.Run(c.name, func(b *testing.B) {
			lim := runtime.Operate(memlimit.New(), runtime.WithObserver(c.obs))
			keys := make([]string, 1024)
			for i := range keys {
				keys[i] = "user:" + strconv.Itoa(i)
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := runtime.Enforce(ctx, lim, runtime.Request{Limit: l, Key: keys[i&1023]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
