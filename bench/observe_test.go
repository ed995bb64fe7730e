package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitotel"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type nopObserver struct{}

func (nopObserver) Observe(context.Context, runtime.Event) {}

// BenchmarkObserve is what observing costs one admitted decision of the
// memory limiter, side by side in one run: the limiter alone, through
// Operate with nothing configured, with an observer that does nothing,
// and with each adapter (Prometheus registered in a registry;
// OpenTelemetry on the SDK with a manual reader).
func BenchmarkObserve(b *testing.B) {
	l := runtime.Limit{Name: "Bench.Observe", Window: time.Second, Max: 1 << 30, Algorithm: runtime.GCRA}
	prom := func() runtime.Limiter {
		obs := ratelimitprom.NewObserver()
		prometheus.NewRegistry().MustRegister(obs)
		return runtime.Operate(memlimit.New(), runtime.WithObserver(obs))
	}
	otel := func() runtime.Limiter {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		obs, err := ratelimitotel.New(ratelimitotel.WithMeterProvider(mp))
		if err != nil {
			b.Fatal(err)
		}
		return runtime.Operate(memlimit.New(), runtime.WithObserver(obs))
	}
	for _, c := range []struct {
		name string
		lim  func() runtime.Limiter
	}{
		{"memory", func() runtime.Limiter { return memlimit.New() }},
		{"operate", func() runtime.Limiter { return runtime.Operate(memlimit.New()) }},
		{"operate+nop", func() runtime.Limiter {
			return runtime.Operate(memlimit.New(), runtime.WithObserver(nopObserver{}))
		}},
		{"operate+prometheus", prom},
		{"operate+otel-sdk", otel},
	} {
		b.Run(c.name, func(b *testing.B) {
			lim := c.lim()
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
