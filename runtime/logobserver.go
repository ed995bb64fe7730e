package runtime

import (
	"context"
	"log/slog"
)

// NewLogObserver returns an Observer that logs each event to l, or to
// slog.Default() when l is nil: errors, and decisions with an Event.Err
// (the store did not decide, or memlimit.ErrFull), at level Warn; other
// denials and shadow denials at Info; other admissions at Debug. A record
// holds the limit's name, max and window, the result, source, cost,
// remaining units, latency, the label when there is one, and the error;
// never the key.
func NewLogObserver(l *slog.Logger) Observer {
	return logObserver{l: l}
}

type logObserver struct{ l *slog.Logger }

func (o logObserver) Observe(ctx context.Context, ev Event) {
	l := o.l
	if l == nil {
		l = slog.Default()
	}
	level := slog.LevelDebug
	switch {
	case ev.Err != nil:
		level = slog.LevelWarn
	case ev.Result == ResultLimited, ev.Result == ResultShadowLimited:
		level = slog.LevelInfo
	}
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("limit", ev.Limit.Name),
		slog.Int("max", ev.Limit.Max),
		slog.Duration("window", ev.Limit.Window),
		slog.String("result", ev.Result.String()),
	)
	if ev.Result != ResultError {
		attrs = append(attrs, slog.String("source", ev.Source.String()), slog.Int("remaining", ev.Remaining))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.Any("err", ev.Err))
	}
	attrs = append(attrs, slog.Int64("cost", ev.Cost), slog.Duration("latency", ev.Latency))
	if ev.Label != "" {
		attrs = append(attrs, slog.String("label", ev.Label))
	}
	l.LogAttrs(ctx, level, "ratelimit decision", attrs...)
}
