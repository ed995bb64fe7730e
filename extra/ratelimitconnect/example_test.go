package ratelimitconnect_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// A connect-go handler that calls runtime.Enforce (as a generated wrapper
// does) answers its 4th SendCode for one address within a minute with
// resource_exhausted, and the client reads how long to wait.
func Example() {
	// A clock that stands still keeps the output exact; a real service
	// uses memlimit.New() or redislimit.New(client).
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	limiter := memlimit.New(memlimit.WithClock(func() time.Time { return now }))
	limit := runtime.Limit{Name: "Verifier.SendCode", Window: time.Minute, Max: 3}

	const procedure = "/verify.v1.Verifier/SendCode"
	mux := http.NewServeMux()
	mux.Handle(procedure, connect.NewUnaryHandler(procedure,
		func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
			if err := runtime.Enforce(ctx, limiter, runtime.Request{Limit: limit, Key: req.Msg.GetValue()}); err != nil {
				return nil, err
			}
			return connect.NewResponse(&emptypb.Empty{}), nil
		},
		connect.WithInterceptors(ratelimitconnect.NewInterceptor()),
	))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	client := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](srv.Client(), srv.URL+procedure)
	for range 4 {
		_, err := client.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("carol@example.com")))
		if err == nil {
			fmt.Println("sent")
			continue
		}
		fmt.Println(err)
		if d, ok := ratelimitconnect.RetryDelay(err); ok {
			fmt.Println("retry in", d)
		}
	}
	// Output:
	// sent
	// sent
	// sent
	// resource_exhausted: Too many requests for Verifier.SendCode: at most 3 per 1m0s. Retry in 60 s.
	// retry in 1m0s
}
