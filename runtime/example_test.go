package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A limit of 3 verification codes per minute per e-mail address, decided in
// memory. With Redis, use NewRedisLimiter(client) instead: the calls and the
// decisions are the same.
func ExampleMemoryLimiter() {
	lim := runtime.NewMemoryLimiter()
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

// Generated wrappers turn a denial into a *LimitError; callers test for it
// with errors.Is and read the wait with errors.As.
func ExampleLimitError() {
	l := runtime.Limit{Name: "Orders.Query", Window: time.Second, Max: 50}
	var err error = runtime.NewLimitError(l, runtime.Decision{RetryAfter: 250 * time.Millisecond})

	var le *runtime.LimitError
	if errors.Is(err, runtime.ErrLimited) && errors.As(err, &le) {
		fmt.Println(le.Limit.Name, "retry after", le.RetryAfter)
	}
	fmt.Println(err)
	// Output:
	// Orders.Query retry after 250ms
	// ratelimit: "Orders.Query" allows 50 calls per 1s; retry in 250ms
}

// Key joins the parts of a composite key without ambiguity.
func ExampleKey() {
	fmt.Println(runtime.Key("tenant-a", "user:42"))
	// Output: 8:tenant-a7:user:42
}
