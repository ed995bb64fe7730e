package ratelimitgrpc_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// decideOnly hides every method of a Limiter but Decide.
type decideOnly struct{ runtime.Limiter }

// TestCountCodes: with CountCodes(InvalidArgument), only calls that end
// with INVALID_ARGUMENT count, unary and streaming alike.
func TestCountCodes(t *testing.T) {
	ml, err := ratelimitgrpc.NewMethodLimiter(memlimit.New(), map[string]runtime.Limit{
		verifypb.Verifier_SendCode_FullMethodName:   sendLimit,
		verifypb.Verifier_WatchCodes_FullMethodName: watchLimit,
	}, ratelimitgrpc.ByPeer(), ratelimitgrpc.CountCodes(codes.InvalidArgument))
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	client := serveLimited(t, lis, ml, codeServer{})
	ctx := context.Background()

	for range 5 * sendLimit.Max {
		_, err := client.SendCode(ctx, &verifypb.SendCodeRequest{Email: "ann@example.com"})
		require.NoError(t, err, "an OK call never counts")
	}
	for range sendLimit.Max {
		_, err := client.SendCode(ctx, &verifypb.SendCodeRequest{})
		require.Equal(t, codes.InvalidArgument, status.Code(err))
	}
	_, err = client.SendCode(ctx, &verifypb.SendCodeRequest{Email: "ann@example.com"})
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "after %d invalid calls", sendLimit.Max)

	// A stream that ends OK gives its unit back once its handler returns.
	for range 3 * watchLimit.Max {
		stream, err := client.WatchCodes(ctx, &verifypb.WatchCodesRequest{Email: "ann@example.com"})
		require.NoError(t, err)
		_, err = stream.Recv()
		require.NoError(t, err)
		// The status, and so the end, reaches the client once the
		// interceptor has settled the call.
		_, err = stream.Recv()
		require.ErrorIs(t, err, io.EOF, "the stream ends OK")
	}
}

// TestCountCodesNeedsHolder: a limiter that cannot give units back is
// refused.
func TestCountCodesNeedsHolder(t *testing.T) {
	_, err := ratelimitgrpc.NewMethodLimiter(decideOnly{memlimit.New()}, map[string]runtime.Limit{
		verifypb.Verifier_SendCode_FullMethodName: sendLimit,
	}, ratelimitgrpc.ByPeer(), ratelimitgrpc.CountCodes(codes.Unauthenticated))
	require.ErrorContains(t, err, "CountCodes needs a runtime.Holder")
}
