package ratelimitconnect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitconnect"
	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// key is personal data that must appear in no error message or detail.
const key = "carol@example.com"

const (
	sendCode   = "/test.v1.Notifier/SendCode"
	watchCodes = "/test.v1.Notifier/WatchCodes"
)

var limit = runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 1}

// server is a real connect-go service over HTTP/2 with TLS, whose
// handlers call runtime.Enforce with the request's value as the key, and
// which records the last error a handler returned.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	errs []error
}

func (s *server) record(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
	return err
}

func (s *server) last(t *testing.T) error {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) == 0 {
		t.Fatal("no handler ran")
	}
	return s.errs[len(s.errs)-1]
}

func startServer(t *testing.T, lim runtime.Limiter) *server {
	t.Helper()
	s := &server{}
	opts := connect.WithInterceptors(ratelimitconnect.NewInterceptor())
	mux := http.NewServeMux()
	mux.Handle(sendCode, connect.NewUnaryHandler(sendCode,
		func(ctx context.Context, req *connect.Request[wrapperspb.StringValue]) (*connect.Response[emptypb.Empty], error) {
			if err := s.record(runtime.Enforce(ctx, lim, runtime.Request{Limit: limit, Key: req.Msg.GetValue()})); err != nil {
				return nil, err
			}
			return connect.NewResponse(&emptypb.Empty{}), nil
		}, opts))
	mux.Handle(watchCodes, connect.NewServerStreamHandler(watchCodes,
		func(ctx context.Context, req *connect.Request[wrapperspb.StringValue], stream *connect.ServerStream[wrapperspb.StringValue]) error {
			if err := s.record(runtime.Enforce(ctx, lim, runtime.Request{Limit: limit, Key: req.Msg.GetValue()})); err != nil {
				return err
			}
			return stream.Send(wrapperspb.String("code sent"))
		}, opts))
	s.Server = httptest.NewUnstartedServer(mux)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// protocols are the client options of each protocol a connect-go server
// speaks.
var protocols = map[string][]connect.ClientOption{
	"connect":      nil,
	"grpc":         {connect.WithGRPC()},
	"grpc-web":     {connect.WithGRPCWeb()},
	"connect+json": {connect.WithProtoJSON()},
}

// TestUnaryDenial: over each protocol, the first call for a key is
// admitted and the second answers resource_exhausted with a RetryInfo the
// client reads, never shorter than the denial's RetryAfter, and a
// QuotaFailure naming the limit; no part of the error names the key.
func TestUnaryDenial(t *testing.T) {
	for name, opts := range protocols {
		t.Run(name, func(t *testing.T) {
			clock := testclock.New()
			srv := startServer(t, memlimit.New(memlimit.WithClock(clock.Now)))
			client := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](srv.Client(), srv.URL+sendCode, opts...)
			ctx := t.Context()

			_, err := client.CallUnary(ctx, connect.NewRequest(wrapperspb.String(key)))
			if err != nil {
				t.Fatalf("first call: %v", err)
			}
			clock.Advance(1500 * time.Microsecond) // a wait with a fraction of a millisecond

			_, err = client.CallUnary(ctx, connect.NewRequest(wrapperspb.String(key)))
			if got := connect.CodeOf(err); got != connect.CodeResourceExhausted {
				t.Fatalf("second call: code %v, want resource_exhausted: %v", got, err)
			}
			var le *runtime.LimitError
			if !errors.As(srv.last(t), &le) {
				t.Fatalf("the handler returned %v, not a *runtime.LimitError", srv.last(t))
			}
			real := le.Decision.RetryAfter
			if real <= 0 || real%time.Millisecond == 0 {
				t.Fatalf("RetryAfter %v: the test wants a wait with a fraction of a millisecond", real)
			}

			var ce *connect.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *connect.Error", err)
			}
			if want := "Too many requests for Notifier.SendCode: at most 1 per 1m0s. Retry in 60 s."; ce.Message() != want {
				t.Errorf("message %q, want %q", ce.Message(), want)
			}
			ri := detail[*errdetails.RetryInfo](t, ce)
			delay := ri.GetRetryDelay().AsDuration()
			if delay <= 0 || delay < real {
				t.Errorf("retry_delay %v: want > 0 and >= RetryAfter %v", delay, real)
			}
			if delay != real {
				t.Errorf("retry_delay %v is not RetryAfter %v exactly", delay, real)
			}
			// The metadata reaches the client as headers (Connect) or
			// trailers (gRPC, gRPC-Web).
			if got := ce.Meta().Get("Retry-After"); got != "60" {
				t.Errorf("Retry-After %q in the error's metadata, want 60", got)
			}
			if got := ce.Meta().Get("RateLimit"); got != `"Notifier.SendCode";r=0;t=60` {
				t.Errorf("RateLimit %q in the error's metadata", got)
			}
			if got := ce.Meta().Get("RateLimit-Policy"); got != `"Notifier.SendCode";q=1;w=60` {
				t.Errorf("RateLimit-Policy %q in the error's metadata", got)
			}
			if d, ok := ratelimitconnect.RetryDelay(err); !ok || d != delay {
				t.Errorf("RetryDelay = %v, %v; want %v, true", d, ok, delay)
			}
			q := detail[*errdetails.QuotaFailure](t, ce)
			if v := q.GetViolations(); len(v) != 1 || v[0].GetSubject() != limit.Name || v[0].GetQuotaId() != limit.Name || v[0].GetQuotaValue() != 1 {
				t.Errorf("QuotaFailure %v", q)
			}
			assertNoKey(t, ce)

			// Another key has its own count.
			if _, err := client.CallUnary(ctx, connect.NewRequest(wrapperspb.String("dave@example.com"))); err != nil {
				t.Errorf("another key: %v", err)
			}
			// A client that waits retry_delay is admitted.
			clock.Advance(delay)
			if _, err := client.CallUnary(ctx, connect.NewRequest(wrapperspb.String(key))); err != nil {
				t.Errorf("after waiting retry_delay %v: %v", delay, err)
			}
		})
	}
}

// TestConnectStatus429: on the wire, a denied Connect unary call is HTTP
// 429 with a Connect error body (without one, Connect clients would see
// unavailable), which names the limit but not the key.
func TestConnectStatus429(t *testing.T) {
	srv := startServer(t, memlimit.New())
	post := func() (*http.Response, []byte) {
		t.Helper()
		resp, err := srv.Client().Post(srv.URL+sendCode, "application/json", strings.NewReader(`"`+key+`"`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	if resp, body := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %s %s", resp.Status, body)
	}
	resp, body := post()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second call: %s %s, want 429", resp.Status, body)
	}
	if got := resp.Header.Get("Retry-After"); got != "60" {
		t.Errorf("Retry-After %q, want 60", got)
	}
	if got := resp.Header.Get("RateLimit"); !strings.HasPrefix(got, `"Notifier.SendCode";r=0;t=`) {
		t.Errorf("RateLimit %q", got)
	}
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Type string `json:"type"`
		} `json:"details"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if e.Code != "resource_exhausted" || !strings.Contains(e.Message, limit.Name) {
		t.Errorf("body %s", body)
	}
	var types []string
	for _, d := range e.Details {
		types = append(types, d.Type)
	}
	if len(types) != 2 || types[0] != "google.rpc.RetryInfo" || types[1] != "google.rpc.QuotaFailure" {
		t.Errorf("detail types %v", types)
	}
	if strings.Contains(string(body), key) {
		t.Errorf("the body names the key: %s", body)
	}
}

// TestStreamDenial: a server-streaming call is decided when it starts:
// the first stream delivers its message and the second ends with
// resource_exhausted and the RetryInfo, over Connect and gRPC.
func TestStreamDenial(t *testing.T) {
	for _, name := range []string{"connect", "grpc", "grpc-web"} {
		t.Run(name, func(t *testing.T) {
			srv := startServer(t, memlimit.New())
			client := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](srv.Client(), srv.URL+watchCodes, protocols[name]...)
			recv := func() (int, error) {
				stream, err := client.CallServerStream(t.Context(), connect.NewRequest(wrapperspb.String(key)))
				if err != nil {
					return 0, err
				}
				defer stream.Close()
				n := 0
				for stream.Receive() {
					n++
				}
				return n, stream.Err()
			}
			if n, err := recv(); err != nil || n != 1 {
				t.Fatalf("first stream: %d messages, %v", n, err)
			}
			n, err := recv()
			if n != 0 || connect.CodeOf(err) != connect.CodeResourceExhausted {
				t.Fatalf("second stream: %d messages, %v", n, err)
			}
			var le *runtime.LimitError
			if !errors.As(srv.last(t), &le) {
				t.Fatalf("the handler returned %v", srv.last(t))
			}
			if d, ok := ratelimitconnect.RetryDelay(err); !ok || d < le.Decision.RetryAfter {
				t.Errorf("RetryDelay = %v, %v; want >= %v", d, ok, le.Decision.RetryAfter)
			}
			var ce *connect.Error
			errors.As(err, &ce)
			assertNoKey(t, ce)
		})
	}
}

// failing is a Limiter whose backend is down.
type failing struct{}

func (failing) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{}, fmt.Errorf("redis at 10.0.0.7:6379 for %s: %w", key, runtime.ErrUnavailable)
}

// TestUnavailable: a limiter that could not decide answers unavailable,
// without details and without the limiter's error text or the key.
func TestUnavailable(t *testing.T) {
	for _, name := range []string{"connect", "grpc"} {
		t.Run(name, func(t *testing.T) {
			srv := startServer(t, failing{})
			client := connect.NewClient[wrapperspb.StringValue, emptypb.Empty](srv.Client(), srv.URL+sendCode, protocols[name]...)
			_, err := client.CallUnary(t.Context(), connect.NewRequest(wrapperspb.String(key)))
			if connect.CodeOf(err) != connect.CodeUnavailable {
				t.Fatalf("code %v, want unavailable: %v", connect.CodeOf(err), err)
			}
			var ce *connect.Error
			errors.As(err, &ce)
			if len(ce.Details()) != 0 {
				t.Errorf("details %v", ce.Details())
			}
			if _, ok := ratelimitconnect.RetryDelay(err); ok {
				t.Error("RetryDelay reports a wait for a limiter failure")
			}
			if strings.Contains(ce.Message(), "10.0.0.7") {
				t.Errorf("the message names the backend: %q", ce.Message())
			}
			assertNoKey(t, ce)
		})
	}
}

// TestError covers the translations that need no server.
func TestError(t *testing.T) {
	other := errors.New("boom")
	if ce, ok := ratelimitconnect.Error(other); ok || ce != nil {
		t.Errorf("Error(other) = %v, %v", ce, ok)
	}
	if _, ok := ratelimitconnect.Error(nil); ok {
		t.Error("Error(nil) reports a rate-limit outcome")
	}
	chosen := connect.NewError(connect.CodeInternal, &runtime.LimitError{Limit: limit})
	if _, ok := ratelimitconnect.Error(fmt.Errorf("wrapped: %w", chosen)); ok {
		t.Error("a *connect.Error the handler chose is translated")
	}
	ce, ok := ratelimitconnect.Error(fmt.Errorf("wrapped: %w", runtime.ErrLimited))
	if !ok || ce.Code() != connect.CodeResourceExhausted || len(ce.Details()) != 0 {
		t.Errorf("ErrLimited: %v, %v", ce, ok)
	}
	// An invalid limit still gets the RetryInfo, exactly; a negative wait
	// becomes 0.
	for _, tc := range []struct{ wait, want time.Duration }{
		{0, 0},
		{-time.Second, 0},
		{time.Nanosecond, time.Nanosecond},
		{time.Millisecond, time.Millisecond},
		{41200*time.Millisecond + 1, 41200*time.Millisecond + 1},
	} {
		ce, ok := ratelimitconnect.Error(&runtime.LimitError{Decision: runtime.Decision{RetryAfter: tc.wait}})
		if !ok {
			t.Fatal("a LimitError is not translated")
		}
		if d, ok := ratelimitconnect.RetryDelay(ce); !ok || d != tc.want {
			t.Errorf("wait %v: RetryDelay %v, %v; want %v", tc.wait, d, ok, tc.want)
		}
		if len(ce.Details()) != 1 {
			t.Errorf("an invalid limit has %d details, want the RetryInfo alone", len(ce.Details()))
		}
	}
}

// detail returns the one detail of type T in ce, read as the client reads
// it, through Value.
func detail[T proto.Message](t *testing.T, ce *connect.Error) T {
	t.Helper()
	var found []T
	for _, d := range ce.Details() {
		v, err := d.Value()
		if err != nil {
			t.Fatalf("detail %s: %v", d.Type(), err)
		}
		if m, ok := v.(T); ok {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d details of type %T in %v", len(found), zero, ce.Details())
	}
	return found[0]
}

// assertNoKey fails if the key appears in ce's message or any detail.
func assertNoKey(t *testing.T, ce *connect.Error) {
	t.Helper()
	texts := []string{ce.Message(), ce.Error()}
	for _, d := range ce.Details() {
		texts = append(texts, string(d.Bytes()))
		if v, err := d.Value(); err == nil {
			texts = append(texts, prototext.Format(v))
		}
	}
	for _, s := range texts {
		if strings.Contains(s, key) || strings.Contains(s, "carol") {
			t.Errorf("the error names the key: %q", s)
		}
	}
}

// TestErrorOfInFlightDenial: a concurrency limit's denial has no wait to
// give: no RetryInfo and no Retry-After, and a policy in requests in flight.
func TestErrorOfInFlightDenial(t *testing.T) {
	exports := runtime.Limit{Name: "Exports", Window: time.Minute, Max: 2, Algorithm: runtime.Concurrency}
	ce, ok := ratelimitconnect.Error(&runtime.LimitError{Limit: exports})
	if !ok || ce.Code() != connect.CodeResourceExhausted {
		t.Fatalf("Error = %v, %v", ce, ok)
	}
	if want := "Too many requests in flight for Exports: at most 2 at once. Retry once one ends."; ce.Message() != want {
		t.Errorf("message %q, want %q", ce.Message(), want)
	}
	if _, ok := ratelimitconnect.RetryDelay(ce); ok {
		t.Error("a RetryInfo without a wait to give")
	}
	if v := ce.Meta().Values("Retry-After"); len(v) != 0 {
		t.Errorf("Retry-After %q", v)
	}
	if got, want := ce.Meta().Get("RateLimit-Policy"), `"Exports";q=2;qu="concurrent-requests"`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
	if qf := detail[*errdetails.QuotaFailure](t, ce); qf.GetViolations()[0].GetQuotaValue() != 2 {
		t.Errorf("QuotaFailure %v", qf)
	}
}
