package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// Three verification codes per minute per e-mail address, counted in Redis
// so that every instance of the service shares the count. runtime.Enforce
// is what generated wrappers call: nil admits the call, a
// *runtime.LimitError denies it, and any other error means that no
// decision was made. (It needs a Redis server, so it has no output to
// check.)
func Example() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer client.Close()
	lim := redislimit.New(client, redislimit.WithFailurePolicy(redislimit.FailClosed))
	sendCode := runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}

	for i := 1; i <= 4; i++ {
		err := runtime.Enforce(context.Background(), lim, runtime.Request{Limit: sendCode, Key: "someone@example.com"})
		var le *runtime.LimitError
		switch {
		case err == nil:
			fmt.Printf("call %d: sending the code\n", i)
		case errors.As(err, &le):
			fmt.Printf("call %d: denied, retry in %v\n", i, le.Decision.RetryAfter.Round(time.Second)) // HTTP 429
		case errors.Is(err, runtime.ErrUnavailable):
			fmt.Printf("call %d: redis unavailable: %v\n", i, err) // HTTP 503
		default:
			fmt.Printf("call %d: %v\n", i, err)
		}
	}
}
