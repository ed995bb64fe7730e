package ratelimitotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitotel"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// A limiter operated with the OpenTelemetry observer: three calls against
// a limit of two a minute, then what a reader collects. A real program
// gives New its MeterProvider (with an OTLP or Prometheus exporter), or
// sets the global one, instead of this ManualReader.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	obs, err := ratelimitotel.New(
		ratelimitotel.WithMeterProvider(mp),
		ratelimitotel.WithLabelAttribute("app.plan"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	lim := runtime.Operate(memlimit.New(),
		runtime.WithObserver(obs),
		runtime.WithLabel(func(context.Context, runtime.Request) string { return "free" }),
	)

	ctx := context.Background()
	sendCode := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 2}
	for range 3 {
		err := runtime.Enforce(ctx, lim, runtime.Request{Limit: sendCode, Key: "someone@example.com"})
		fmt.Println("denied:", errors.Is(err, runtime.ErrLimited))
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range data.DataPoints {
				lines = append(lines, fmt.Sprintf("%s %s{%s} %d", m.Name, m.Unit, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
			}
		case metricdata.Histogram[float64]:
			for _, p := range data.DataPoints {
				lines = append(lines, fmt.Sprintf("%s %s{%s} count=%d", m.Name, m.Unit, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Count))
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// denied: false
	// denied: false
	// denied: true
	// ratelimitgen.decision.duration s{app.plan=free,ratelimitgen.limit.name=Notifier.SendCode,ratelimitgen.result=allowed,ratelimitgen.source=store} count=2
	// ratelimitgen.decision.duration s{app.plan=free,ratelimitgen.limit.name=Notifier.SendCode,ratelimitgen.result=limited,ratelimitgen.source=store} count=1
	// ratelimitgen.decisions {decision}{app.plan=free,ratelimitgen.limit.name=Notifier.SendCode,ratelimitgen.result=allowed,ratelimitgen.source=store} 2
	// ratelimitgen.decisions {decision}{app.plan=free,ratelimitgen.limit.name=Notifier.SendCode,ratelimitgen.result=limited,ratelimitgen.source=store} 1
	// ratelimitgen.near_limit_decisions {decision}{app.plan=free,ratelimitgen.limit.name=Notifier.SendCode,ratelimitgen.result=allowed,ratelimitgen.source=store} 1
}
