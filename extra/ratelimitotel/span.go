package ratelimitotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// DecisionEventName is the name of the span event SpanObserver adds.
const DecisionEventName = "ratelimitgen.decision"

// The attribute keys that SpanObserver's events carry besides those of the
// Observer's measurements.
const (
	// CostKey is the request's cost in units.
	CostKey = attribute.Key("ratelimitgen.cost")
	// RemainingKey is the units the limit can still admit after the
	// decision.
	RemainingKey = attribute.Key("ratelimitgen.remaining")
	// RetryAfterKey is how long, in seconds, until the limit has room for
	// the call again; present only when it had none.
	RetryAfterKey = attribute.Key("ratelimitgen.retry_after")
)

// SpanObserver is a runtime.Observer that puts decisions on traces. For
// each limit of each call it adds a DecisionEventName event to the span in
// the call's context, with LimitNameKey, ResultKey, CostKey, and SourceKey,
// RemainingKey and (without room) RetryAfterKey, or for errors
// ErrorTypeKey. When a limit denies
// the call, the span also gets LimitNameKey and ResultKey "limited" as
// attributes, so that denied requests can be searched for. It does nothing
// when the span is not recording, and never records the key. The zero
// value is ready to use:
//
//	runtime.Operate(lim, runtime.WithObserver(ratelimitotel.SpanObserver{}))
type SpanObserver struct{}

// Observe implements runtime.Observer.
func (SpanObserver) Observe(ctx context.Context, ev runtime.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, LimitNameKey.String(ev.Limit.Name), ResultKey.String(ev.Result.String()), CostKey.Int64(ev.Cost))
	if ev.Result == runtime.ResultError || ev.Result == runtime.ResultUnsettled {
		attrs = append(attrs, ErrorTypeKey.String(errorType(ev.Err)))
	} else {
		attrs = append(attrs, SourceKey.String(ev.Source.String()), RemainingKey.Int(ev.Remaining))
		if ev.RetryAfter > 0 {
			attrs = append(attrs, RetryAfterKey.Float64(ev.RetryAfter.Seconds()))
		}
	}
	span.AddEvent(DecisionEventName, trace.WithAttributes(attrs...))
	if ev.Result == runtime.ResultLimited {
		span.SetAttributes(attrs[:2]...)
	}
}
