package main

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	verifyv1 "github.com/ratelimitgen/ratelimitgen/examples/verifyrpc/gen/verify/v1"
	"github.com/ratelimitgen/ratelimitgen/examples/verifyrpc/gen/verify/v1/verifyv1connect"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

const email = "carol@example.com"

// spacing is the time between calls: verify.proto admits 3 SendCode calls
// a minute for one address, so the 4th, made 2*spacing after the 1st, is
// told to wait until the 1st leaves the window, 60s - 2*spacing later.
const (
	spacing = 20 * time.Second
	wait    = 20 * time.Second
)

// connectClient serves the Connect handler on a real HTTP server and
// returns a connect-go client of it.
func connectClient(t *testing.T, m *mailer, limiter runtime.Limiter) verifyv1connect.VerifierClient {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(newConnectHandler(m, limiter))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return verifyv1connect.NewVerifierClient(srv.Client(), srv.URL)
}

// grpcClientOfConnect serves the Connect handler as main does, HTTP/2
// without TLS beside HTTP/1.1, and returns a grpc-go client of it: connect-go
// handlers speak the gRPC protocol too.
func grpcClientOfConnect(t *testing.T, m *mailer, limiter runtime.Limiter) verifyv1.VerifierClient {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(newConnectHandler(m, limiter))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	conn, err := grpc.NewClient(srv.Listener.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return verifyv1.NewVerifierClient(conn)
}

// grpcClient serves the grpc-go server on a loopback port and returns a
// grpc-go client of it.
func grpcClient(t *testing.T, m *mailer, limiter runtime.Limiter) verifyv1.VerifierClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newGRPCServer(m, limiter)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return verifyv1.NewVerifierClient(conn)
}

// TestConnectClientIsDenied: a connect-go client is admitted max times,
// then answered resource_exhausted with a RetryInfo of the exact wait, by
// the wrapper that verify.proto's declaration generated.
func TestConnectClientIsDenied(t *testing.T) {
	clock := testclock.New()
	m := newMailer()
	client := connectClient(t, m, memlimit.New(memlimit.WithClock(clock.Now)))
	req := connect.NewRequest(&verifyv1.SendCodeRequest{Email: email})
	for i := range 3 {
		_, err := client.SendCode(t.Context(), req)
		require.NoError(t, err, "call %d", i+1)
		clock.Advance(spacing)
	}
	clock.Advance(-spacing)

	_, err := client.SendCode(t.Context(), req)
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	t.Logf("connect-go client, 4th call: %v", ce)
	assert.Equal(t, connect.CodeResourceExhausted, ce.Code())
	assert.Equal(t, "Too many requests for Verifier.SendCode: at most 3 per 1m0s. Retry in 20 s.", ce.Message())
	var retry *errdetails.RetryInfo
	for _, d := range ce.Details() {
		v, err := d.Value()
		require.NoError(t, err)
		t.Logf("detail %s: %v", d.Type(), v)
		if ri, ok := v.(*errdetails.RetryInfo); ok {
			retry = ri
		}
	}
	require.NotNil(t, retry, "no RetryInfo")
	assert.Equal(t, wait, retry.GetRetryDelay().AsDuration())
	d, ok := ratelimitconnect.RetryDelay(err)
	assert.True(t, ok)
	assert.Equal(t, wait, d)
	assert.NotContains(t, ce.Error(), email, "the key is personal data")
	assert.Equal(t, 3, m.count(email), "the denied call reached the service")

	// Another address has its own count.
	_, err = client.SendCode(t.Context(), connect.NewRequest(&verifyv1.SendCodeRequest{Email: "dave@example.com"}))
	assert.NoError(t, err)
}

// TestGRPCClientIsDenied: a grpc-go client is admitted max times, then
// answered RESOURCE_EXHAUSTED with a RetryInfo of the exact wait, by the
// wrapper of the grpc-go server generated from the same declaration, and
// by the Connect handler's, which serves the gRPC protocol too.
func TestGRPCClientIsDenied(t *testing.T) {
	for name, serve := range map[string]func(*testing.T, *mailer, runtime.Limiter) verifyv1.VerifierClient{
		"grpc-go server":  grpcClient,
		"connect handler": grpcClientOfConnect,
	} {
		t.Run(name, func(t *testing.T) {
			clock := testclock.New()
			m := newMailer()
			client := serve(t, m, memlimit.New(memlimit.WithClock(clock.Now)))
			req := &verifyv1.SendCodeRequest{Email: email}
			for i := range 3 {
				_, err := client.SendCode(t.Context(), req)
				require.NoError(t, err, "call %d", i+1)
				clock.Advance(spacing)
			}
			clock.Advance(-spacing)

			_, err := client.SendCode(t.Context(), req)
			st, ok := status.FromError(err)
			require.True(t, ok, "%v is not a gRPC status", err)
			t.Logf("grpc-go client, 4th call: %v", st.Err())
			assert.Equal(t, codes.ResourceExhausted, st.Code())
			assert.Equal(t, "Too many requests for Verifier.SendCode: at most 3 per 1m0s. Retry in 20 s.", st.Message())
			var retry *errdetails.RetryInfo
			for _, d := range st.Details() {
				t.Logf("detail %T: %v", d, d)
				if ri, ok := d.(*errdetails.RetryInfo); ok {
					retry = ri
				}
			}
			require.NotNil(t, retry, "no RetryInfo")
			assert.Equal(t, wait, retry.GetRetryDelay().AsDuration())
			d, ok := ratelimitgrpc.RetryDelay(err)
			assert.True(t, ok)
			assert.Equal(t, wait, d)
			assert.NotContains(t, err.Error(), email, "the key is personal data")
			assert.Equal(t, 3, m.count(email), "the denied call reached the service")
		})
	}
}

// TestStreamsAreLimited: WatchCodes admits 2 streams a minute for one
// address, over either stack; the 3rd is denied before its first message.
func TestStreamsAreLimited(t *testing.T) {
	clock := testclock.New()
	limiter := memlimit.New(memlimit.WithClock(clock.Now))
	cc := connectClient(t, newMailer(), limiter)
	gc := grpcClient(t, newMailer(), limiter)

	stream, err := cc.WatchCodes(t.Context(), connect.NewRequest(&verifyv1.WatchCodesRequest{Email: email}))
	require.NoError(t, err)
	require.True(t, stream.Receive(), "first Connect stream: %v", stream.Err())
	require.NoError(t, stream.Close())

	gs, err := gc.WatchCodes(t.Context(), &verifyv1.WatchCodesRequest{Email: email})
	require.NoError(t, err)
	_, err = gs.Recv()
	require.NoError(t, err, "second stream, over gRPC")

	stream, err = cc.WatchCodes(t.Context(), connect.NewRequest(&verifyv1.WatchCodesRequest{Email: email}))
	require.NoError(t, err)
	assert.False(t, stream.Receive())
	assert.Equal(t, connect.CodeResourceExhausted, connect.CodeOf(stream.Err()), "third stream: %v", stream.Err())
	d, ok := ratelimitconnect.RetryDelay(stream.Err())
	assert.True(t, ok)
	assert.Equal(t, time.Minute, d)

	gs, err = gc.WatchCodes(t.Context(), &verifyv1.WatchCodesRequest{Email: email})
	require.NoError(t, err)
	_, err = gs.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "fourth stream: %v", err)
}

// TestOneCountForBothStacks: the Connect and gRPC wrappers hold limits of
// the same names, so with one limiter an address has one count, whichever
// stack its calls reach.
func TestOneCountForBothStacks(t *testing.T) {
	clock := testclock.New()
	limiter := memlimit.New(memlimit.WithClock(clock.Now))
	m := newMailer()
	cc, gc := connectClient(t, m, limiter), grpcClient(t, m, limiter)
	for range 2 {
		_, err := cc.SendCode(t.Context(), connect.NewRequest(&verifyv1.SendCodeRequest{Email: email}))
		require.NoError(t, err)
	}
	_, err := gc.SendCode(t.Context(), &verifyv1.SendCodeRequest{Email: email})
	require.NoError(t, err)

	_, err = cc.SendCode(t.Context(), connect.NewRequest(&verifyv1.SendCodeRequest{Email: email}))
	assert.Equal(t, connect.CodeResourceExhausted, connect.CodeOf(err), "%v", err)
	_, err = gc.SendCode(t.Context(), &verifyv1.SendCodeRequest{Email: email})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	var le *runtime.LimitError
	assert.False(t, errors.As(err, &le), "a client sees a status, not the server's error")
	assert.Equal(t, 3, m.count(email))
}

// TestOnlyWrongCodesCount: VerifyCode's limit counts only the calls that
// end PERMISSION_DENIED, on either stack: right codes, however many, do not
// count; the 5 wrong codes allowed in 10 minutes are shared by both; the
// next call, right or wrong, is refused before it runs.
func TestOnlyWrongCodesCount(t *testing.T) {
	clock := testclock.New()
	limiter := memlimit.New(memlimit.WithClock(clock.Now))
	m := newMailer()
	cc, gc := connectClient(t, m, limiter), grpcClient(t, m, limiter)
	verifyConnect := func(code string) error {
		_, err := cc.VerifyCode(t.Context(), connect.NewRequest(&verifyv1.VerifyCodeRequest{Email: email, Code: code}))
		return err
	}
	verifyGRPC := func(code string) error {
		_, err := gc.VerifyCode(t.Context(), &verifyv1.VerifyCodeRequest{Email: email, Code: code})
		return err
	}

	for n := range 10 {
		require.NoError(t, verifyConnect(rightCode), "right code %d over Connect", n+1)
		require.NoError(t, verifyGRPC(rightCode), "right code %d over gRPC", n+1)
	}
	for n := range 3 {
		err := verifyConnect("000000")
		require.Equal(t, connect.CodePermissionDenied, connect.CodeOf(err), "wrong code %d: %v", n+1, err)
	}
	for n := range 2 {
		err := verifyGRPC("000000")
		require.Equal(t, codes.PermissionDenied, status.Code(err), "wrong code %d: %v", n+4, err)
	}
	err := verifyConnect(rightCode)
	assert.Equal(t, connect.CodeResourceExhausted, connect.CodeOf(err), "after 5 wrong codes: %v", err)
	err = verifyGRPC("000000")
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "after 5 wrong codes: %v", err)

	clock.Advance(10 * time.Minute)
	require.NoError(t, verifyGRPC(rightCode), "the wrong codes left the window")
}
