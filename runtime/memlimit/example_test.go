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
