package ratelimitgrpc_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// blockingServer's calls wait until released; a stream's, until its
// context ends.
type blockingServer struct {
	verifypb.UnimplementedVerifierServer
	entered chan context.Context
	release chan struct{}
}

func (s blockingServer) SendCode(ctx context.Context, _ *verifypb.SendCodeRequest) (*verifypb.SendCodeResponse, error) {
	return &verifypb.SendCodeResponse{}, s.block(ctx)
}

func (s blockingServer) WatchCodes(_ *verifypb.WatchCodesRequest, stream grpc.ServerStreamingServer[verifypb.CodeEvent]) error {
	return s.block(stream.Context())
}

// block says the call entered, and waits until it is released or its
// context ends.
func (s blockingServer) block(ctx context.Context) error {
	select {
	case s.entered <- ctx:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestMethodLimiterInFlight: at most Max calls of a key run at once, unary
// and streaming; a call that ends frees its permit, and a denial carries no
// wait.
func TestMethodLimiterInFlight(t *testing.T) {
	inFlight := runtime.Limit{Name: "Verifier.InFlight", Window: time.Minute, Max: 2, Algorithm: runtime.Concurrency}
	ml, err := ratelimitgrpc.NewMethodLimiter(memlimit.New(), map[string]runtime.Limit{
		verifypb.Verifier_SendCode_FullMethodName:   inFlight,
		verifypb.Verifier_WatchCodes_FullMethodName: inFlight,
	}, ratelimitgrpc.ByPeer())
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := blockingServer{entered: make(chan context.Context), release: make(chan struct{})}
	client := serveLimited(t, lis, ml, s)
	ctx := context.Background()

	done := make(chan error, 3)
	go func() {
		_, err := client.SendCode(ctx, &verifypb.SendCodeRequest{Email: "ann@example.com"})
		done <- err
	}()
	require.NoError(t, (<-s.entered).Err())
	go func() {
		stream, err := client.WatchCodes(ctx, &verifypb.WatchCodesRequest{Email: "ann@example.com"})
		if err == nil {
			_, err = stream.Recv()
		}
		done <- err
	}()
	require.NoError(t, (<-s.entered).Err(), "a held permit leaves the call's context alive")

	// A call wrongly admitted would wait until this deadline.
	denied, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = client.SendCode(denied, &verifypb.SendCodeRequest{Email: "ann@example.com"})
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	_, ok := ratelimitgrpc.RetryDelay(err)
	require.False(t, ok, "no wait to give")

	// One call ends: its permit is free again.
	s.release <- struct{}{}
	<-done
	go func() {
		_, err := client.SendCode(ctx, &verifypb.SendCodeRequest{Email: "ann@example.com"})
		done <- err
	}()
	<-s.entered
	close(s.release)
	for range 2 {
		<-done
	}
}

// TestMethodLimiterInFlightNeedsHolder: a limiter that cannot release a
// permit is refused.
func TestMethodLimiterInFlightNeedsHolder(t *testing.T) {
	_, err := ratelimitgrpc.NewMethodLimiter(decideOnly{memlimit.New()}, map[string]runtime.Limit{
		verifypb.Verifier_SendCode_FullMethodName: {Name: "Verifier.InFlight", Window: time.Minute, Max: 2, Algorithm: runtime.Concurrency},
	}, ratelimitgrpc.ByPeer())
	require.EqualError(t, err, "ratelimitgrpc: NewMethodLimiter: the concurrency limit of /ratelimitgen.verify.v1.Verifier/SendCode needs a runtime.Holder, which ratelimitgrpc_test.decideOnly is not; pass a memlimit or redislimit Limiter, or runtime.Operate's")
}
