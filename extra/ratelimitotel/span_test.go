package ratelimitotel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitotel"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestSpanObserver decides calls inside spans of the real SDK and reads
// back what each span recorded: one event per limit, the denial as span
// attributes, errors with their type, and never the key.
func TestSpanObserver(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	// A clock that stands still, so that each RetryAfter is a whole window.
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	mem := memlimit.New(memlimit.WithClock(func() time.Time { return now }))
	lim := runtime.Operate(mem, runtime.WithObserver(ratelimitotel.SpanObserver{}))
	const key = "alice@example.com"
	send := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 2}
	daily := runtime.Limit{Name: "Notifier.SendCodeDaily", Window: 24 * time.Hour, Max: 1, Mode: runtime.ModeShadow}
	for i := range 3 {
		ctx, span := tracer.Start(context.Background(), fmt.Sprint("call", i))
		_ = runtime.Enforce(ctx, lim, runtime.Request{Limit: send, Key: key}, runtime.Request{Limit: daily, Key: key})
		span.End()
	}
	ctx, span := tracer.Start(context.Background(), "invalid")
	_ = runtime.Enforce(ctx, lim, runtime.Request{Limit: runtime.Limit{Name: "Bad", Window: time.Minute}, Key: key})
	span.End()
	// A context without a span is left alone.
	_ = runtime.Enforce(context.Background(), lim, runtime.Request{Limit: send, Key: "bob"})

	want := map[string][]string{
		"call0":   {"Notifier.SendCode allowed 1 store 1", "Notifier.SendCodeDaily allowed 1 store 0"},
		"call1":   {"Notifier.SendCode allowed 1 store 0", "Notifier.SendCodeDaily shadow-limited 1 store 0 86400"},
		"call2":   {"Notifier.SendCode limited 1 store 0 60", "Notifier.SendCodeDaily shadow-limited 1 store 0 86400"},
		"invalid": {"Bad error 1 _OTHER"},
	}
	spans := rec.Ended()
	if len(spans) != len(want) {
		t.Fatalf("%d spans ended, want %d", len(spans), len(want))
	}
	for _, s := range spans {
		var got []string
		for _, ev := range s.Events() {
			if ev.Name != ratelimitotel.DecisionEventName {
				t.Errorf("%s: event %q", s.Name(), ev.Name)
			}
			var parts []string
			for _, kv := range ev.Attributes {
				parts = append(parts, kv.Value.Emit())
				if strings.Contains(kv.Value.Emit(), key) {
					t.Errorf("%s: the key is in event attribute %s", s.Name(), kv.Key)
				}
			}
			got = append(got, strings.Join(parts, " "))
		}
		if fmt.Sprint(got) != fmt.Sprint(want[s.Name()]) {
			t.Errorf("%s: events %q, want %q", s.Name(), got, want[s.Name()])
		}
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if s.Name() == "call2" {
			if attrs[string(ratelimitotel.LimitNameKey)] != "Notifier.SendCode" || attrs[string(ratelimitotel.ResultKey)] != "limited" {
				t.Errorf("denied call's span attributes %v", attrs)
			}
		} else if len(attrs) != 0 {
			t.Errorf("%s: span attributes %v on a call that was not denied", s.Name(), attrs)
		}
	}
}

// BenchmarkSpanObserver is the cost of one event: with no span in the
// context (the common case of unsampled requests) and on a recording span.
func BenchmarkSpanObserver(b *testing.B) {
	ev := runtime.Event{Limit: runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3},
		Result: runtime.ResultLimited, Cost: 1, RetryAfter: time.Second}
	var obs ratelimitotel.SpanObserver
	b.Run("no span", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			obs.Observe(ctx, ev)
		}
	})
	b.Run("recording span", func(b *testing.B) {
		tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanLimits(sdktrace.SpanLimits{EventCountLimit: 1, AttributeCountLimit: 16, AttributePerEventCountLimit: 16})).Tracer("bench")
		ctx, span := tracer.Start(context.Background(), "request")
		defer span.End()
		b.ReportAllocs()
		for b.Loop() {
			obs.Observe(ctx, ev)
		}
	})
}

// TestSpanObserverWithoutSpanAllocatesNothing: a request whose context holds
// no recording span pays for a lookup, not for attributes.
func TestSpanObserverWithoutSpanAllocatesNothing(t *testing.T) {
	ev := runtime.Event{Limit: runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}, Result: runtime.ResultLimited, Cost: 1}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { ratelimitotel.SpanObserver{}.Observe(ctx, ev) }); n != 0 {
		t.Errorf("%v allocations per event without a span, want 0", n)
	}
}
