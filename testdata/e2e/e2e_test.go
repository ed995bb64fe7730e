package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// recorder is the wrapped Notifier: it counts the calls that reach it.
type recorder struct {
	sendCode map[string]int
	lookup   int
	charge   int
}

func newRecorder() *recorder { return &recorder{sendCode: map[string]int{}} }

func (r *recorder) SendCode(ctx context.Context, req SendCodeRequest) error {
	r.sendCode[req.Email]++
	return nil
}

func (r *recorder) Lookup(ctx context.Context, id int64) (string, error) {
	r.lookup++
	return "found", nil
}

func (r *recorder) Charge(ctx context.Context, acct Account, cents int) (int, error) {
	r.charge++
	return cents, nil
}

func TestMemoryLimiter(t *testing.T) {
	exercise(t, runtime.NewMemoryLimiter())
}

func TestRedisLimiter(t *testing.T) {
	s := redistest.StartServer(t)
	client := s.Client(t)
	// FailClosed, so that a Redis failure cannot pass for a decision of
	// the in-memory fallback; a generous timeout for a busy machine.
	lim := runtime.NewRedisLimiter(client, runtime.WithFailurePolicy(runtime.FailClosed), runtime.WithTimeout(10*time.Second))
	exercise(t, lim)

	n, err := client.DBSize(context.Background()).Result()
	if err != nil || n == 0 {
		t.Fatalf("Redis holds %d keys (err %v) after the calls; want the limits' keys", n, err)
	}

	// With Redis gone, the limiter's error comes back as is and the
	// wrapped method is not called.
	s.Stop(t)
	next := newRecorder()
	err = NewRateLimitedNotifier(next, lim).SendCode(context.Background(), SendCodeRequest{Email: "c@example.com"})
	if !errors.Is(err, runtime.ErrUnavailable) || errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("SendCode with Redis down: got %v, want the limiter's ErrUnavailable error", err)
	}
	if next.sendCode["c@example.com"] != 0 {
		t.Fatal("SendCode was forwarded although the limiter failed")
	}
}

// exercise checks that every method admits 3 calls per key, then denies
// with a *runtime.LimitError without calling the wrapped method, and that
// other keys have their own counts.
func exercise(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	next := newRecorder()
	n := NewRateLimitedNotifier(next, lim)
	var _ Notifier = n

	for i := range 3 {
		if err := n.SendCode(ctx, SendCodeRequest{Email: "a@example.com"}); err != nil {
			t.Fatalf("SendCode call %d: %v", i+1, err)
		}
	}
	err := n.SendCode(ctx, SendCodeRequest{Email: "a@example.com"})
	checkDenied(t, err, "Notifier.SendCode")
	if got := next.sendCode["a@example.com"]; got != 3 {
		t.Fatalf("the wrapped SendCode ran %d times; want 3 (not on denial)", got)
	}
	if err := n.SendCode(ctx, SendCodeRequest{Email: "b@example.com"}); err != nil {
		t.Fatalf("SendCode for another key: %v", err)
	}

	for i := range 3 {
		if s, err := n.Lookup(ctx, 123456789); err != nil || s != "found" {
			t.Fatalf("Lookup call %d: %q, %v", i+1, s, err)
		}
	}
	s, err := n.Lookup(ctx, 123456789)
	checkDenied(t, err, "Notifier.Lookup")
	if s != "" || next.lookup != 3 {
		t.Fatalf("denied Lookup returned %q and the wrapped Lookup ran %d times; want \"\" and 3", s, next.lookup)
	}

	acct := Account{Tenant: "acme", ID: 42}
	for i := range 3 {
		if c, err := n.Charge(ctx, acct, 100); err != nil || c != 100 {
			t.Fatalf("Charge call %d: %d, %v", i+1, c, err)
		}
	}
	c, err := n.Charge(ctx, acct, 100)
	checkDenied(t, err, "Notifier.Charge")
	if c != 0 || next.charge != 3 {
		t.Fatalf("denied Charge returned %d and the wrapped Charge ran %d times; want 0 and 3", c, next.charge)
	}
	// The composite key tells the parts apart: ("acme", 4) is not ("acm", 42) and so on.
	if _, err := n.Charge(ctx, Account{Tenant: "acme4", ID: 2}, 1); err != nil {
		t.Fatalf("Charge for another account: %v", err)
	}
}

func checkDenied(t *testing.T, err error, name string) {
	t.Helper()
	var le *runtime.LimitError
	if !errors.As(err, &le) || !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("4th call: got %v, want a *runtime.LimitError matching runtime.ErrLimited", err)
	}
	if le.Limit.Name != name || le.Limit.Max != 3 || le.Limit.Window != time.Minute || le.RetryAfter <= 0 {
		t.Fatalf("LimitError = %+v; want limit %q, 3 per minute, a positive RetryAfter", le, name)
	}
}

// failing is a Limiter that cannot decide.
type failing struct{ err error }

func (f failing) Allow(context.Context, runtime.Limit, string) (runtime.Decision, error) {
	return runtime.Decision{}, f.err
}

func TestLimiterErrorReturnedAsIs(t *testing.T) {
	boom := errors.New("boom")
	next := newRecorder()
	c, err := NewRateLimitedNotifier(next, failing{boom}).Charge(context.Background(), Account{}, 5)
	if err != boom || c != 0 || next.charge != 0 {
		t.Fatalf("Charge with a failing limiter: %d, %v (wrapped calls %d); want 0, boom, 0", c, err, next.charge)
	}
}

// allowAll admits everything at no cost, so that the benchmarks measure
// the wrapper itself.
type allowAll struct{}

func (allowAll) Allow(context.Context, runtime.Limit, string) (runtime.Decision, error) {
	return runtime.Decision{Allowed: true}, nil
}

// nop is a Notifier that does nothing.
type nop struct{}

func (nop) SendCode(context.Context, SendCodeRequest) error   { return nil }
func (nop) Lookup(context.Context, int64) (string, error)     { return "", nil }
func (nop) Charge(context.Context, Account, int) (int, error) { return 0, nil }

var sinkErr error

// BenchmarkDirect is the baseline: the call without a wrapper.
func BenchmarkDirect(b *testing.B) {
	var n Notifier = nop{}
	ctx := context.Background()
	req := SendCodeRequest{Email: "someone@example.com"}
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = n.SendCode(ctx, req)
	}
}

// BenchmarkStringKey: a single string key is passed as is.
func BenchmarkStringKey(b *testing.B) {
	var n Notifier = NewRateLimitedNotifier(nop{}, allowAll{})
	ctx := context.Background()
	req := SendCodeRequest{Email: "someone@example.com"}
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = n.SendCode(ctx, req)
	}
}

// BenchmarkIntKey: an int64 key formatted with strconv.
func BenchmarkIntKey(b *testing.B) {
	var n Notifier = NewRateLimitedNotifier(nop{}, allowAll{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, sinkErr = n.Lookup(ctx, 123456789)
	}
}

// BenchmarkCompositeKey: a string and an int64 joined in a stack buffer.
func BenchmarkCompositeKey(b *testing.B) {
	var n Notifier = NewRateLimitedNotifier(nop{}, allowAll{})
	ctx := context.Background()
	acct := Account{Tenant: "acme", ID: 123456789}
	b.ReportAllocs()
	for b.Loop() {
		_, sinkErr = n.Charge(ctx, acct, 1)
	}
}
