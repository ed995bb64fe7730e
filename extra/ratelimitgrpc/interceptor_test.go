package ratelimitgrpc_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc/internal/verifypb"
	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// key is personal data that must appear in no status, detail or trailer.
const key = "carol@example.com"

// TestUnaryDenial: through a real server and client, the generated wrapper
// admits 3 calls for one address and the 4th answers RESOURCE_EXHAUSTED
// with RetryInfo, QuotaFailure and the pushback trailer, all from the
// denial's *runtime.LimitError and none naming the key; waiting the
// RetryInfo delay is enough.
func TestUnaryDenial(t *testing.T) {
	clock := testclock.New()
	client, raw := startServer(t, memlimit.New(memlimit.WithClock(clock.Now)))
	ctx := t.Context()
	req := &verifypb.SendCodeRequest{Email: key}

	for i := range 3 {
		var trailer metadata.MD
		_, err := client.SendCode(ctx, req, grpc.Trailer(&trailer))
		require.NoError(t, err, "call %d", i+1)
		assert.Empty(t, trailer.Get(ratelimitgrpc.PushbackTrailer), "an admitted call has no pushback")
		clock.Advance(time.Second)
	}

	var trailer metadata.MD
	_, err := client.SendCode(ctx, req, grpc.Trailer(&trailer))
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "4th call: %v", err)

	var le *runtime.LimitError
	require.ErrorAs(t, raw.last(t), &le, "the handler's error")
	real := le.Decision.RetryAfter
	require.Greater(t, real, time.Duration(0))
	// The first admission was 3 s ago: it leaves the 1-minute window in 57 s.
	assert.Equal(t, 57*time.Second, real)

	assert.Equal(t, "Too many requests for Verifier.SendCode: at most 3 per 1m0s. Retry in 57 s.", st.Message())

	delay, ok := ratelimitgrpc.RetryDelay(err)
	require.True(t, ok, "no RetryInfo in %v", st.Details())
	assert.GreaterOrEqual(t, delay, real, "RetryInfo is never shorter than the real wait")
	assert.LessOrEqual(t, delay, time.Minute, "RetryInfo is at most the window")

	quota := detail[*errdetails.QuotaFailure](t, st)
	require.Len(t, quota.GetViolations(), 1)
	v := quota.GetViolations()[0]
	assert.Equal(t, "Verifier.SendCode", v.GetSubject())
	assert.Equal(t, "Verifier.SendCode", v.GetQuotaId())
	assert.Equal(t, int64(3), v.GetQuotaValue())
	assert.Equal(t, "Too many requests for Verifier.SendCode: at most 3 per 1m0s.", v.GetDescription())

	require.Len(t, trailer.Get(ratelimitgrpc.PushbackTrailer), 1, "exactly one pushback value, or grpc-go will not retry")
	ms, err := strconv.ParseInt(trailer.Get(ratelimitgrpc.PushbackTrailer)[0], 10, 64)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Duration(ms)*time.Millisecond, real)
	assert.Equal(t, int64(57_000), ms)

	assertNoKey(t, st, trailer)

	// The limit is per address.
	_, err = client.SendCode(ctx, &verifypb.SendCodeRequest{Email: "dave@example.com"})
	require.NoError(t, err)

	// A client that waits the RetryInfo delay is admitted.
	clock.Advance(delay)
	_, err = client.SendCode(ctx, req)
	require.NoError(t, err, "after waiting RetryInfo's %v", delay)
}

// TestStreamDenial: a server-streaming call is decided once, before its
// first message: 2 streams go through and the 3rd ends with
// RESOURCE_EXHAUSTED, its details and the pushback trailer.
func TestStreamDenial(t *testing.T) {
	clock := testclock.New()
	client, raw := startServer(t, memlimit.New(memlimit.WithClock(clock.Now)))
	req := &verifypb.WatchCodesRequest{Email: key}

	for i := range 2 {
		stream, err := client.WatchCodes(t.Context(), req)
		require.NoError(t, err)
		ev, err := stream.Recv()
		require.NoError(t, err, "stream %d", i+1)
		assert.Equal(t, key, ev.GetEmail())
		_, err = stream.Recv()
		require.ErrorIs(t, err, io.EOF, "stream %d", i+1)
		assert.Empty(t, stream.Trailer().Get(ratelimitgrpc.PushbackTrailer))
	}

	stream, err := client.WatchCodes(t.Context(), req)
	require.NoError(t, err)
	_, err = stream.Recv()
	st := status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "3rd stream: %v", err)
	assert.Equal(t, "Too many requests for Verifier.WatchCodes: at most 2 per 1m0s. Retry in 60 s.", st.Message())

	var le *runtime.LimitError
	require.ErrorAs(t, raw.last(t), &le)
	delay, ok := ratelimitgrpc.RetryDelay(err)
	require.True(t, ok)
	assert.Equal(t, le.Decision.RetryAfter, delay)
	assert.Equal(t, "Verifier.WatchCodes", detail[*errdetails.QuotaFailure](t, st).GetViolations()[0].GetSubject())
	assert.Equal(t, []string{strconv.FormatInt(le.Decision.RetryAfter.Milliseconds(), 10)},
		stream.Trailer().Get(ratelimitgrpc.PushbackTrailer))
	assertNoKey(t, st, stream.Trailer())
}

// downLimiter is a limiter that cannot decide, as a redislimit.Limiter
// under FailClosed while Redis is down: its error wraps
// runtime.ErrUnavailable and describes the infrastructure.
type downLimiter struct{}

const downCause = "dial tcp 10.1.2.3:6379: connect: connection refused"

func (downLimiter) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{}, fmt.Errorf("redislimit: %s: %w", downCause, runtime.ErrUnavailable)
}

// TestUnavailable: a limiter that cannot decide answers UNAVAILABLE, unary
// and streaming, with neither the limiter's error text nor a pushback or
// RetryInfo, since no wait is known.
func TestUnavailable(t *testing.T) {
	client, _ := startServer(t, downLimiter{})

	var trailer metadata.MD
	_, err := client.SendCode(t.Context(), &verifypb.SendCodeRequest{Email: key}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	require.Equal(t, codes.Unavailable, st.Code(), "%v", err)
	assert.NotContains(t, st.Message(), "10.1.2.3")
	assert.NotContains(t, st.Message(), "refused")
	assert.Empty(t, st.Details())
	assert.Empty(t, trailer.Get(ratelimitgrpc.PushbackTrailer))
	_, ok := ratelimitgrpc.RetryDelay(err)
	assert.False(t, ok)
	assertNoKey(t, st, trailer)

	stream, err := client.WatchCodes(t.Context(), &verifypb.WatchCodesRequest{Email: key})
	require.NoError(t, err)
	_, err = stream.Recv()
	st = status.Convert(err)
	require.Equal(t, codes.Unavailable, st.Code(), "%v", err)
	assert.NotContains(t, st.Message(), "10.1.2.3")
	assert.Empty(t, stream.Trailer().Get(ratelimitgrpc.PushbackTrailer))
}

// TestOtherErrorsPassThrough: errors that are not rate-limit outcomes
// reach the client as they would without the interceptors.
func TestOtherErrorsPassThrough(t *testing.T) {
	client, _ := startServer(t, memlimit.New())

	var trailer metadata.MD
	_, err := client.SendCode(t.Context(), &verifypb.SendCodeRequest{}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	assert.Equal(t, codes.InvalidArgument, st.Code())
	assert.Equal(t, "email is required", st.Message())
	assert.Empty(t, trailer.Get(ratelimitgrpc.PushbackTrailer))

	_, err = client.SendCode(t.Context(), &verifypb.SendCodeRequest{Email: "broken@example.com"})
	st = status.Convert(err)
	assert.Equal(t, codes.Unknown, st.Code())
	assert.Equal(t, "mailer is down", st.Message())
}

// detail returns st's one detail of type T.
func detail[T proto.Message](t *testing.T, st *status.Status) T {
	t.Helper()
	var found []T
	for _, d := range st.Details() {
		if m, ok := d.(T); ok {
			found = append(found, m)
		}
	}
	require.Len(t, found, 1, "details: %v", st.Details())
	return found[0]
}

// assertNoKey checks that the key is nowhere in what the client received.
func assertNoKey(t *testing.T, st *status.Status, trailer metadata.MD) {
	t.Helper()
	assert.NotContains(t, strings.ToLower(st.Message()), key)
	for _, d := range st.Details() {
		m, ok := d.(proto.Message)
		require.True(t, ok, "detail %T", d)
		assert.NotContains(t, prototext.Format(m), key)
	}
	assert.NotContains(t, prototext.Format(st.Proto()), key)
	for k, vs := range trailer {
		for _, v := range vs {
			assert.NotContains(t, k+": "+v, key)
		}
	}
}

// contextRecorder remembers the gRPC method and the incoming "tenant"
// metadata of the contexts it decides with.
type contextRecorder struct {
	runtime.Limiter
	mu      sync.Mutex
	methods []string
	tenants []string
}

func (c *contextRecorder) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	method, _ := grpc.Method(ctx)
	c.mu.Lock()
	c.methods = append(c.methods, method)
	c.tenants = append(c.tenants, metadata.ValueFromIncomingContext(ctx, "tenant")...)
	c.mu.Unlock()
	return c.Limiter.Decide(ctx, reqs...)
}

// TestStreamIsDecidedWithItsContext: the server interface gives a
// streaming method no context parameter; the generated wrapper decides
// with the stream's, so the call's method and metadata reach the limiter
// (and with them Operate's labels and the call's deadline).
func TestStreamIsDecidedWithItsContext(t *testing.T) {
	rec := &contextRecorder{Limiter: memlimit.New(memlimit.WithClock(testclock.New().Now))}
	client, _ := startServer(t, rec)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "tenant", "acme")
	stream, err := client.WatchCodes(ctx, &verifypb.WatchCodesRequest{Email: key})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []string{verifypb.Verifier_WatchCodes_FullMethodName}, rec.methods)
	assert.Equal(t, []string{"acme"}, rec.tenants)
}
