package ratelimitotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitotel"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestOperate decides through runtime.Operate and a memlimit.Limiter with
// the Observer attached, and checks what the SDK collects: an enforced
// limit admitting, then denying, then refusing a cost it cannot hold; a
// shadow limit that only reports; a disabled limit that is not observed;
// and the label of runtime.WithLabel under the chosen key.
func TestOperate(t *testing.T) {
	obs, reader := setup(t, ratelimitotel.WithLabelAttribute("app.plan"))
	lim := runtime.Operate(memlimit.New(),
		runtime.WithObserver(obs),
		runtime.WithLabel(func(context.Context, runtime.Request) string { return "free" }),
	)
	ctx := context.Background()
	perMinute := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 2}
	daily := runtime.Limit{Name: "Notifier.SendCodeDaily", Window: 24 * time.Hour, Max: 1, Mode: runtime.ModeShadow}
	off := runtime.Limit{Name: "Notifier.Off", Window: time.Minute, Max: 1, Mode: runtime.ModeOff}
	both := []runtime.Request{
		{Limit: perMinute, Key: "someone@example.com"},
		{Limit: daily, Key: "someone@example.com"},
		{Limit: off, Key: "someone@example.com"},
	}

	// perMinute: 1 then 0 remaining of 2 (near the limit); daily: 0
	// remaining of 1 (near), then shadow-limited; off: never observed.
	for range 2 {
		if err := runtime.Enforce(ctx, lim, both...); err != nil {
			t.Fatal(err)
		}
	}
	if err := runtime.Enforce(ctx, lim, runtime.Request{Limit: perMinute, Key: "someone@example.com"}); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("third call: %v, want a denial", err)
	}
	if err := runtime.Enforce(ctx, lim, runtime.Request{Limit: perMinute, Key: "other", Cost: 3}); !errors.Is(err, runtime.ErrInvalidCost) {
		t.Fatalf("cost 3 of 2: %v, want ErrInvalidCost", err)
	}

	free := attribute.Key("app.plan").String("free")
	allowed := attrs(perMinute.Name, "allowed", "store", free)
	limited := attrs(perMinute.Name, "limited", "store", free)
	invalid := attrs(perMinute.Name, "error", "", free, ratelimitotel.ErrorTypeKey.String("invalid_cost"))
	dailyAllowed := attrs(daily.Name, "allowed", "store", free)
	dailyShadow := attrs(daily.Name, "shadow-limited", "store", free)

	got := collect(t, reader)
	opts := []metricdatatest.Option{metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars()}
	metricdatatest.AssertEqual(t, counter(ratelimitotel.DecisionsName, decisionsDesc,
		metricdata.DataPoint[int64]{Attributes: allowed, Value: 2},
		metricdata.DataPoint[int64]{Attributes: limited, Value: 1},
		metricdata.DataPoint[int64]{Attributes: invalid, Value: 1},
		metricdata.DataPoint[int64]{Attributes: dailyAllowed, Value: 1},
		metricdata.DataPoint[int64]{Attributes: dailyShadow, Value: 1},
	), got[ratelimitotel.DecisionsName], opts...)
	metricdatatest.AssertEqual(t, counter(ratelimitotel.NearLimitDecisionsName, nearDesc,
		metricdata.DataPoint[int64]{Attributes: allowed, Value: 1},
		metricdata.DataPoint[int64]{Attributes: dailyAllowed, Value: 1},
	), got[ratelimitotel.NearLimitDecisionsName], opts...)

	// One duration for each decision, each a real in-process latency.
	h := got[ratelimitotel.DecisionDurationName]
	if h.Unit != "s" {
		t.Errorf("duration unit %q, want s", h.Unit)
	}
	counts := map[attribute.Distinct]uint64{}
	for _, p := range h.Data.(metricdata.Histogram[float64]).DataPoints {
		counts[p.Attributes.Equivalent()] = p.Count
		if maxV, _ := p.Max.Value(); maxV <= 0 || maxV > 1 {
			t.Errorf("%v: max latency %vs", p.Attributes.Encoded(attribute.DefaultEncoder()), maxV)
		}
	}
	want := map[attribute.Distinct]uint64{
		allowed.Equivalent(): 2, limited.Equivalent(): 1, invalid.Equivalent(): 1,
		dailyAllowed.Equivalent(): 1, dailyShadow.Equivalent(): 1,
	}
	if len(counts) != len(want) {
		t.Errorf("%d duration series, want %d", len(counts), len(want))
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("duration count %d, want %d", counts[k], n)
		}
	}
}
