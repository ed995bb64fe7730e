package ratelimitgrpc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// A gRPC service whose methods are generated wrappers answers its 4th
// SendCode for one address within a minute with RESOURCE_EXHAUSTED, and
// the client reads how long to wait.
func Example() {
	// A clock that stands still keeps the output exact; a real service
	// uses memlimit.New() or redislimit.New(client).
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	limiter := memlimit.New(memlimit.WithClock(func() time.Time { return now }))

	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(ratelimitgrpc.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(ratelimitgrpc.StreamServerInterceptor()),
	)
	verifypb.RegisterVerifierServer(srv, verifypb.NewRateLimitedVerifierServer(codeServer{}, limiter))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis) //nolint:errcheck // Stop ends it
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	client := verifypb.NewVerifierClient(cc)

	for range 4 {
		_, err := client.SendCode(context.Background(), &verifypb.SendCodeRequest{Email: "carol@example.com"})
		if err == nil {
			fmt.Println("sent")
			continue
		}
		st := status.Convert(err)
		fmt.Printf("%v: %s\n", st.Code(), st.Message())
		if d, ok := ratelimitgrpc.RetryDelay(err); ok {
			fmt.Println("retry in", d)
		}
	}
	// Output:
	// sent
	// sent
	// sent
	// ResourceExhausted: Too many requests for Verifier.SendCode: at most 3 per 1m0s. Retry in 60 s.
	// retry in 1m0s
}
