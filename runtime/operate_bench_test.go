package runtime

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"
)

type discardObserver struct{}

func (discardObserver) Observe(context.Context, Event) {}

// BenchmarkOperate measures what Operate adds to an admitted decision of
// the memory limiter: nothing configured, an observer that does nothing,
// the log observer with admissions below its level, and overrides in force
// for another limit.
func BenchmarkOperate(b *testing.B) {
	l := Limit{Name: "Bench.Operate", Window: time.Second, Max: 1 << 30, Algorithm: GCRA}
	var ov Overrides
	if err := ov.Set(map[string]Override{"Bench.Other": {Max: 5}}); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, c := range []struct {
		name string
		lim  func() Limiter
	}{
		{"memory", func() Limiter { return NewMemoryLimiter() }},
		{"operate", func() Limiter { return Operate(NewMemoryLimiter()) }},
		{"operate+observer", func() Limiter { return Operate(NewMemoryLimiter(), WithObserver(discardObserver{})) }},
		{"operate+log", func() Limiter { return Operate(NewMemoryLimiter(), WithObserver(NewLogObserver(quiet))) }},
		{"operate+overrides", func() Limiter { return Operate(NewMemoryLimiter(), WithOverrides(&ov)) }},
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
				if err := Enforce(ctx, lim, Request{Limit: l, Key: keys[i&1023]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
