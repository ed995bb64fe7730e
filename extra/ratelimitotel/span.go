package ratelimitotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// DecisionEventName is the name of the span event SpanObserver adds.
const DecisionEventName = "ratelimitgen.decision"

// RemainingKey is the units the limit can still admit after the decision.
const RemainingKey = attribute.Key("ratelimitgen.remaining")

// SpanObserver is a runtime.Observer that puts decisions on traces. For
// each limit of each call it adds a DecisionEventName event to the span in
// the call's context, with LimitNameKey, ResultKey, SourceKey (not for
// errors), RemainingKey and, for errors, ErrorTypeKey. When a limit denies
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
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, LimitNameKey.String(ev.Limit.Name), ResultKey.String(ev.Result.String()))
	if ev.Result == runtime.ResultError {
		attrs = append(attrs, ErrorTypeKey.String(errorType(ev.Err)))
	} else {
		attrs = append(attrs, SourceKey.String(ev.Source.String()), RemainingKey.Int(ev.Remaining))
	}
	span.AddEvent(DecisionEventName, trace.WithAttributes(attrs...))
	if ev.Result == runtime.ResultLimited {
		span.SetAttributes(attrs[:2]...)
	}
}
