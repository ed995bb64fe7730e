package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// Enforce turns a denial into a *LimitError, as generated wrappers do;
// callers test for it with errors.Is and read the wait with errors.As.
func ExampleEnforce() {
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	lim := memlimit.New(memlimit.WithClock(func() time.Time { return clock }))
	query := runtime.Limit{Name: "Orders.Query", Window: time.Second, Max: 2}
	ctx := context.Background()

	for i := 1; i <= 3; i++ {
		err := runtime.Enforce(ctx, lim, runtime.Request{Limit: query, Key: "user-42"})
		var le *runtime.LimitError
		switch {
		case err == nil:
			fmt.Printf("call %d: admitted\n", i)
		case errors.As(err, &le):
			fmt.Printf("call %d: %v (retry after %v)\n", i, err, le.Decision.RetryAfter)
		default:
			fmt.Println("no decision:", err)
		}
	}
	// Output:
	// call 1: admitted
	// call 2: admitted
	// call 3: ratelimit: "Orders.Query" allows 2 calls per 1s; retry in 1s (retry after 1s)
}

// A call that must pass two limits at once, costing 3 units of the second:
// it is admitted only if both have room, and a denial records nothing.
func ExampleLimiter_Decide() {
	lim := memlimit.New()
	perUser := runtime.Limit{Name: "Export.PerUser", Window: time.Minute, Max: 5}
	rows := runtime.Limit{Name: "Export.Rows", Window: time.Minute, Max: 4, Algorithm: runtime.FixedWindow}

	for i := 1; i <= 2; i++ {
		ds, err := lim.Decide(context.Background(),
			runtime.Request{Limit: perUser, Key: "user-42"},
			runtime.Request{Limit: rows, Key: "tenant-a", Cost: 3},
		)
		if err != nil {
			fmt.Println("no decision:", err)
			return
		}
		fmt.Printf("call %d: allowed=%v per-user had room=%v rows had room=%v\n", i, ds.Allowed, ds.Each[0].Allowed, ds.Each[1].Allowed)
	}
	// Output:
	// call 1: allowed=true per-user had room=true rows had room=true
	// call 2: allowed=false per-user had room=true rows had room=false
}

// Key joins the parts of a composite key without ambiguity.
func ExampleKey() {
	fmt.Println(runtime.Key("tenant-a", "user:42"))
	// Output: 8:tenant-a7:user:42
}

// Operating a limit at run time: a new limit rolls out in shadow mode,
// counted and reported but never denying, and an override raises another
// limit's Max without a deploy. The log observer reports each decision;
// the Prometheus and OpenTelemetry observers live in modules of their own.
func ExampleOperate() {
	var overrides runtime.Overrides
	logs := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "latency" {
				return slog.Attr{} // vary from run to run
			}
			return a
		},
	}))
	lim := runtime.Operate(memlimit.New(),
		runtime.WithOverrides(&overrides),
		runtime.WithObserver(runtime.NewLogObserver(logs)),
	)
	ctx := context.Background()
	daily := runtime.Limit{Name: "Notifier.SendCodeDaily", Window: 24 * time.Hour, Max: 1, Mode: runtime.ModeShadow}
	perMinute := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 1}
	call := func() {
		err := runtime.Enforce(ctx, lim,
			runtime.Request{Limit: perMinute, Key: "someone@example.com"},
			runtime.Request{Limit: daily, Key: "someone@example.com"})
		fmt.Println("error:", err)
	}
	call()
	if err := overrides.Set(map[string]runtime.Override{"Notifier.SendCode": {Max: 2}}); err != nil {
		fmt.Println(err)
		return
	}
	call()
	// Output:
	// error: <nil>
	// level=INFO msg="ratelimit decision" limit=Notifier.SendCodeDaily max=1 window=24h0m0s result=shadow-limited source=store remaining=0 cost=1
	// error: <nil>
}
