package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type discardObserver struct{}

func (discardObserver) Observe(context.Context, runtime.Event) {}

// BenchmarkOperate measures what Operate adds to an admitted decision of
// the memory limiter: nothing configured, an observer that does nothing,
// the log observer with admissions below its level, and overrides in force
// for another limit.
func BenchmarkOperate(b *testing.B) {
	l := runtime.Limit{Name: "Bench.Operate", Window: time.Second, Max: 1 << 30, Algorithm: runtime.GCRA}
	var ov runtime.Overrides
	if err := ov.Set(map[string]runtime.Override{"Bench.Other": {Max: 5}}); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, c := range []struct {
		name string
		lim  func() runtime.Limiter
	}{
		{"memory", func() runtime.Limiter { return memlimit.New() }},
		{"operate", func() runtime.Limiter { return runtime.Operate(memlimit.New()) }},
		{"operate+observer", func() runtime.Limiter {
			return runtime.Operate(memlimit.New(), runtime.WithObserver(discardObserver{}))
		}},
		{"operate+log", func() runtime.Limiter {
			return runtime.Operate(memlimit.New(), runtime.WithObserver(runtime.NewLogObserver(quiet)))
		}},
		{"operate+overrides", func() runtime.Limiter { return runtime.Operate(memlimit.New(), runtime.WithOverrides(&ov)) }},
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
