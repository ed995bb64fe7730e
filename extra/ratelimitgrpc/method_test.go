package ratelimitgrpc_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

var (
	sendLimit  = runtime.Limit{Name: "api.SendCode", Window: time.Minute, Max: 2}
	watchLimit = runtime.Limit{Name: "api.WatchCodes", Window: time.Minute, Max: 1}
)

// startMethodLimited serves codeServer, without generated wrappers, behind
// the interceptors of a MethodLimiter with SendCode and WatchCodes limited.
func startMethodLimited(t *testing.T, lim runtime.Limiter, key ratelimitgrpc.KeyFunc, send runtime.Limit) verifypb.VerifierClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serveMethodLimited(t, lis, lim, key, send)
}

// serveMethodLimited is startMethodLimited on lis, with a client of its
// own connection.
func serveMethodLimited(t *testing.T, lis net.Listener, lim runtime.Limiter, key ratelimitgrpc.KeyFunc, send runtime.Limit) verifypb.VerifierClient {
	t.Helper()
	ml, err := ratelimitgrpc.NewMethodLimiter(lim, map[string]runtime.Limit{
		verifypb.Verifier_SendCode_FullMethodName:   send,
		verifypb.Verifier_WatchCodes_FullMethodName: watchLimit,
	}, key)
	require.NoError(t, err)
	return serveLimited(t, lis, ml, codeServer{})
}

// serveLimited serves impl on lis behind ml's interceptors until the test
// ends, and returns a client of its own connection.
func serveLimited(t *testing.T, lis net.Listener, ml *ratelimitgrpc.MethodLimiter, impl verifypb.VerifierServer) verifypb.VerifierClient {
	t.Helper()
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(ml.Unary()), grpc.ChainStreamInterceptor(ml.Stream()))
	verifypb.RegisterVerifierServer(srv, impl)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		require.NoError(t, <-served)
	})
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cc.Close()) })
	return verifypb.NewVerifierClient(cc)
}

// TestMethodLimiterByMetadata: a unary method limited per metadata value
// admits Max calls per value and then answers as Status does, with the
// pushback trailer and without the key; a call without the metadata is
// INVALID_ARGUMENT.
func TestMethodLimiterByMetadata(t *testing.T) {
	clock := testclock.New()
	client := startMethodLimited(t, memlimit.New(memlimit.WithClock(clock.Now)),
		ratelimitgrpc.ByMetadata("X-Api-Key"), sendLimit)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-api-key", key)
	req := &verifypb.SendCodeRequest{Email: "anyone@example.com"}

	for i := range 2 {
		_, err := client.SendCode(ctx, req)
		require.NoError(t, err, "call %d", i+1)
	}
	var trailer metadata.MD
	_, err := client.SendCode(ctx, req, grpc.Trailer(&trailer))
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	assert.Equal(t, "Too many requests for api.SendCode: at most 2 per 1m0s. Retry in 60 s.", st.Message())
	d, ok := ratelimitgrpc.RetryDelay(err)
	require.True(t, ok)
	assert.Equal(t, time.Minute, d)
	assert.Equal(t, []string{"60000"}, trailer.Get(ratelimitgrpc.PushbackTrailer))
	assertNoKey(t, st, trailer)

	other := metadata.AppendToOutgoingContext(t.Context(), "x-api-key", "dave")
	_, err = client.SendCode(other, req)
	require.NoError(t, err, "another key has its own count")

	_, err = client.SendCode(t.Context(), req)
	st = status.Convert(err)
	assert.Equal(t, codes.InvalidArgument, st.Code())
	assert.Equal(t, `metadata "x-api-key" is required: this method's rate limit is per x-api-key`, st.Message())

	clock.Advance(d)
	_, err = client.SendCode(ctx, req)
	require.NoError(t, err, "after the RetryInfo delay")
}

// TestMethodLimiterStream: a streaming method is decided when it starts.
func TestMethodLimiterStream(t *testing.T) {
	clock := testclock.New()
	client := startMethodLimited(t, memlimit.New(memlimit.WithClock(clock.Now)), ratelimitgrpc.ByPeer(), sendLimit)
	req := &verifypb.WatchCodesRequest{Email: key}

	stream, err := client.WatchCodes(t.Context(), req)
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	require.ErrorIs(t, err, io.EOF)

	stream, err = client.WatchCodes(t.Context(), req)
	require.NoError(t, err)
	_, err = stream.Recv()
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "%v", err)
	assert.Equal(t, "Too many requests for api.WatchCodes: at most 1 per 1m0s. Retry in 60 s.", st.Message())
	assert.Equal(t, []string{"60000"}, stream.Trailer().Get(ratelimitgrpc.PushbackTrailer))
}

// TestMethodLimiterShadow: a limit in ModeShadow counts but never denies.
func TestMethodLimiterShadow(t *testing.T) {
	shadow := sendLimit
	shadow.Mode = runtime.ModeShadow
	client := startMethodLimited(t, memlimit.New(), ratelimitgrpc.ByPeer(), shadow)
	for i := range 2 * shadow.Max {
		_, err := client.SendCode(t.Context(), &verifypb.SendCodeRequest{Email: key})
		require.NoError(t, err, "call %d", i+1)
	}
}

// TestMethodLimiterUnavailable: a limiter error is UNAVAILABLE, without
// its text, and the handler is not called.
func TestMethodLimiterUnavailable(t *testing.T) {
	client := startMethodLimited(t, downLimiter{}, ratelimitgrpc.ByPeer(), sendLimit)
	var trailer metadata.MD
	_, err := client.SendCode(t.Context(), &verifypb.SendCodeRequest{Email: key}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	require.Equal(t, codes.Unavailable, st.Code(), "%v", err)
	assert.NotContains(t, st.Message(), "10.1.2.3")
	assert.Empty(t, trailer.Get(ratelimitgrpc.PushbackTrailer))
}

func TestNewMethodLimiterErrors(t *testing.T) {
	lim := memlimit.New()
	ok := map[string]runtime.Limit{"/p.S/M": sendLimit}
	for _, tc := range []struct {
		name   string
		lim    runtime.Limiter
		limits map[string]runtime.Limit
		key    ratelimitgrpc.KeyFunc
		want   string
	}{
		{"nil limiter", nil, ok, ratelimitgrpc.ByPeer(), "nil Limiter"},
		{"nil key", lim, ok, nil, "nil KeyFunc"},
		{"no leading slash", lim, map[string]runtime.Limit{"p.S/M": sendLimit}, ratelimitgrpc.ByPeer(), `method "p.S/M" is not a full method name`},
		{"no method", lim, map[string]runtime.Limit{"/p.S/": sendLimit}, ratelimitgrpc.ByPeer(), `method "/p.S/" is not a full method name`},
		{"a service only", lim, map[string]runtime.Limit{"/p.S": sendLimit}, ratelimitgrpc.ByPeer(), `method "/p.S" is not a full method name`},
		{"invalid limit", lim, map[string]runtime.Limit{"/p.S/M": {Name: "x", Window: time.Minute}}, ratelimitgrpc.ByPeer(), "limit of /p.S/M"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ml, err := ratelimitgrpc.NewMethodLimiter(tc.lim, tc.limits, tc.key)
			require.Error(t, err)
			assert.Nil(t, ml)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
