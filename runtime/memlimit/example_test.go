package memlimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// A limit of 3 verification codes per minute per e-mail address, decided in
// memory. With Redis, use redislimit.New(client) instead: the calls and the
// decisions are the same.
func Example() {
	lim := memlimit.New()
	sendCode := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}

	for i := 1; i <= 4; i++ {
		d, err := lim.Allow(context.Background(), sendCode, "someone@example.com")
		if err != nil {
			fmt.Println("no decision:", err)
			return
		}
		fmt.Printf("call %d: allowed=%v remaining=%d\n", i, d.Allowed, d.Remaining)
	}
	// Output:
	// call 1: allowed=true remaining=2
	// call 2: allowed=true remaining=1
	// call 3: allowed=true remaining=0
	// call 4: allowed=false remaining=0
}

// A budget of 1,000 model tokens per minute per team. A call reserves the
// most it may use, and is settled at what it used once it returns: the
// units it did not use are given back at once.
func ExampleLimiter_Hold() {
	ctx := context.Background()
	lim := memlimit.New()
	tokens := runtime.Limit{Name: "Model.Complete", Window: time.Minute, Max: 1000}

	hold, err := runtime.Admit(ctx, lim, runtime.Request{Limit: tokens, Key: "team-42", Cost: 500})
	if err != nil {
		fmt.Println("not admitted:", err)
		return
	}
	ds, _ := runtime.Peek(ctx, lim, runtime.Request{Limit: tokens, Key: "team-42"})
	fmt.Println("while the call runs:", ds.Each[0].Remaining)

	used := int64(120) // what the call reported
	if err := hold.Settle(ctx, used); err != nil {
		fmt.Println("not settled:", err)
	}
	ds, _ = runtime.Peek(ctx, lim, runtime.Request{Limit: tokens, Key: "team-42"})
	fmt.Println("once settled:", ds.Each[0].Remaining)
	fmt.Println("settled again:", hold.Settle(ctx, used))
	// Output:
	// while the call runs: 500
	// once settled: 880
	// settled again: ratelimit: the call was settled already
}

// At most 2 exports at once per team. A call takes a permit when admitted
// and gives it back when settled; runtime.Keep renews the permit's lease
// (here 30 seconds) while the call runs, so that the permits of a process
// that died come back within one lease.
func ExampleLimiter_Hold_concurrency() {
	ctx := context.Background()
	lim := memlimit.New()
	exports := runtime.Limit{Name: "Reports.Export", Window: 30 * time.Second, Max: 2, Algorithm: runtime.Concurrency}
	req := runtime.Request{Limit: exports, Key: "team-42"}

	hold, err := runtime.Admit(ctx, lim, req)
	if err != nil {
		fmt.Println("not admitted:", err)
		return
	}
	callCtx, stop := runtime.Keep(ctx, hold)
	_ = callCtx // the export runs in callCtx, which ends if the permit is lost
	ds, _ := runtime.Peek(ctx, lim, req)
	fmt.Println("free while the export runs:", ds.Each[0].Remaining)

	stop()
	if err := hold.Settle(ctx, 1); err != nil {
		fmt.Println("not settled:", err)
	}
	ds, _ = runtime.Peek(ctx, lim, req)
	fmt.Println("free once settled:", ds.Each[0].Remaining)
	// Output:
	// free while the export runs: 1
	// free once settled: 2
}
