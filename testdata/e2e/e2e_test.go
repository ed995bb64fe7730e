package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
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
	exercise(t, memlimit.New())
	clock := newClock()
	exerciseAlerts(t, memlimit.New(memlimit.WithClock(clock.Now)), clock)
}

func TestRedisLimiter(t *testing.T) {
	s := redistest.StartServer(t)
	client := s.Client(t)
	// FailClosed, so that a Redis failure cannot pass for a decision of
	// the in-memory fallback; a generous timeout for a busy machine.
	lim := redislimit.New(client, redislimit.WithFailurePolicy(redislimit.FailClosed), redislimit.WithTimeout(10*time.Second))
	exercise(t, lim)
	clock := newClock()
	exerciseAlerts(t, redislimit.New(client, redislimit.WithFailurePolicy(redislimit.FailClosed), redislimit.WithTimeout(10*time.Second),
		redislimit.WithClock(clock.Now), redislimit.WithPrefix("alerts:")), clock)

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
	checkDenied(t, err, here+"Notifier.SendCode")
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
	checkDenied(t, err, here+"Notifier.Lookup")
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
	checkDenied(t, err, here+"Notifier.Charge")
	if c != 0 || next.charge != 3 {
		t.Fatalf("denied Charge returned %d and the wrapped Charge ran %d times; want 0 and 3", c, next.charge)
	}
	// The composite key tells the parts apart: ("acme", 4) is not ("acm", 42) and so on.
	if _, err := n.Charge(ctx, Account{Tenant: "acme4", ID: 2}, 1); err != nil {
		t.Fatalf("Charge for another account: %v", err)
	}
}

// here is the import path of this package, which starts the default
// names of its limits.
var here = reflect.TypeFor[Notifier]().PkgPath() + "."

func checkDenied(t *testing.T, err error, name string) {
	t.Helper()
	var le *runtime.LimitError
	if !errors.As(err, &le) || !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("4th call: got %v, want a *runtime.LimitError matching runtime.ErrLimited", err)
	}
	if le.Limit.Name != name || le.Limit.Max != 3 || le.Limit.Window != time.Minute || le.Decision.RetryAfter <= 0 {
		t.Fatalf("LimitError = %+v; want limit %q, 3 per minute, a positive RetryAfter", le, name)
	}
}

// failing is a Limiter that cannot decide.
type failing struct{ err error }

func (f failing) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{}, f.err
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

func (allowAll) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{Allowed: true}, nil
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

// clock is a manual clock for the limiters, so that windows pass without
// waiting.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// alertsRecorder is the wrapped Alerts: it counts the calls that reach it.
type alertsRecorder struct{ page, digest, upload, adjust, bulk int }

func (a *alertsRecorder) Page(context.Context, string) error { a.page++; return nil }
func (a *alertsRecorder) Digest(context.Context, string, []string) error {
	a.digest++
	return nil
}
func (a *alertsRecorder) Upload(context.Context, string, uint64) error { a.upload++; return nil }
func (a *alertsRecorder) Adjust(context.Context, string, int64) error  { a.adjust++; return nil }
func (a *alertsRecorder) Bulk(context.Context, string, uint64) error   { a.bulk++; return nil }

// exerciseAlerts checks several limits on one method (all-or-nothing) and
// costs (a cost no limit can admit is an error, not a denial).
func exerciseAlerts(t *testing.T, lim runtime.Limiter, clock *clock) {
	t.Helper()
	ctx := context.Background()
	next := &alertsRecorder{}
	a := NewRateLimitedAlerts(next, lim)
	var _ Alerts = a

	// Page: 3 per minute and 5 per hour. The 4th call is denied by the
	// per-minute limit.
	for i := range 3 {
		if err := a.Page(ctx, "ops@example.com"); err != nil {
			t.Fatalf("Page call %d: %v", i+1, err)
		}
	}
	checkDeniedBy(t, a.Page(ctx, "ops@example.com"), here+"Alerts.Page", 3, time.Minute)
	if next.page != 3 {
		t.Fatalf("the wrapped Page ran %d times; want 3", next.page)
	}
	// A minute later the per-minute limit has room again. The hourly one
	// admits exactly 2 more calls: the denied 4th call took nothing from
	// it, or only 1 would pass.
	clock.Advance(time.Minute + time.Second)
	for i := range 2 {
		if err := a.Page(ctx, "ops@example.com"); err != nil {
			t.Fatalf("Page call %d after a minute: %v (the denied call must not count against the hourly limit)", i+4, err)
		}
	}
	checkDeniedBy(t, a.Page(ctx, "ops@example.com"), "Alerts.Page.hourly", 5, time.Hour)
	if next.page != 5 {
		t.Fatalf("the wrapped Page ran %d times; want 5", next.page)
	}
	// Another address has its own counts.
	if err := a.Page(ctx, "dev@example.com"); err != nil {
		t.Fatalf("Page for another address: %v", err)
	}

	// Digest: a bucket of 4 tokens, one per line; more lines than the
	// bucket holds is an error that names the cost.
	checkCostError(t, a.Digest(ctx, "ops@example.com", make([]string, 5)), "Digest", 5)
	if err := a.Digest(ctx, "ops@example.com", make([]string, 4)); err != nil {
		t.Fatalf("Digest of 4 lines, the bucket's capacity: %v", err)
	}
	checkDeniedBy(t, a.Digest(ctx, "ops@example.com", make([]string, 1)), here+"Alerts.Digest", 10, time.Minute)
	// No line at all costs nothing: admitted even with the bucket empty,
	// as x/time/rate's AllowN(0) is, and recorded nowhere.
	if err := a.Digest(ctx, "ops@example.com", nil); err != nil {
		t.Fatalf("Digest of no line with the bucket empty: %v", err)
	}
	if next.digest != 2 {
		t.Fatalf("the wrapped Digest ran %d times; want 2", next.digest)
	}

	// Upload: a uint64 cost beyond int64's range becomes a negative cost,
	// never a small admissible one, and one beyond a 32-bit int's stays
	// what it is.
	for _, size := range []uint64{math.MaxUint64, 1<<63 + 1, 1<<32 + 1, 1001} {
		checkCostError(t, a.Upload(ctx, "ops@example.com", size), "Upload", int64(size))
	}
	if err := a.Upload(ctx, "ops@example.com", 1000); err != nil {
		t.Fatalf("Upload of the limit's capacity: %v", err)
	}
	if err := a.Upload(ctx, "ops@example.com", 0); err != nil {
		t.Fatalf("Upload of 0 bytes with the limit used up: %v", err)
	}
	if next.upload != 2 {
		t.Fatalf("the wrapped Upload ran %d times; want 2", next.upload)
	}

	// Adjust: an int64 cost, negative or beyond a 32-bit int's range.
	for _, units := range []int64{-1, math.MinInt64, 1<<32 + 1, 11} {
		checkCostError(t, a.Adjust(ctx, "ops@example.com", units), "Adjust", units)
	}
	if err := a.Adjust(ctx, "ops@example.com", 10); err != nil {
		t.Fatalf("Adjust of the limit's capacity: %v", err)
	}
	if next.adjust != 1 {
		t.Fatalf("the wrapped Adjust ran %d times; want 1", next.adjust)
	}

	// Bulk: the same costs with two limits.
	for _, n := range []uint64{11, 1<<64 - 1, 1 << 63} {
		checkCostError(t, a.Bulk(ctx, "ops@example.com", n), "Bulk", int64(n))
	}
	if next.bulk != 0 {
		t.Fatalf("the wrapped Bulk ran %d times for costs no limit admits; want 0", next.bulk)
	}
	if err := a.Bulk(ctx, "ops@example.com", 10); err != nil {
		t.Fatalf("Bulk of 10: %v", err)
	}
	checkDeniedBy(t, a.Bulk(ctx, "ops@example.com", 1), here+"Alerts.Bulk", 10, time.Minute)
	// The total had room for that call, which took none of it: nine other
	// addresses can use the 90 units left, and then it is full.
	for i := range 9 {
		if err := a.Bulk(ctx, fmt.Sprintf("user%d@example.com", i), 10); err != nil {
			t.Fatalf("Bulk for address %d: %v (the denied call must not count against the total)", i, err)
		}
	}
	checkDeniedBy(t, a.Bulk(ctx, "last@example.com", 1), "Alerts.Bulk.total", 100, time.Minute)
	// A cost of 0 leaves both limits out (a Request's Cost of 0 would
	// mean 1): admitted with both full.
	if err := a.Bulk(ctx, "ops@example.com", 0); err != nil {
		t.Fatalf("Bulk of 0 with both limits full: %v", err)
	}
	if next.bulk != 11 {
		t.Fatalf("the wrapped Bulk ran %d times; want 11", next.bulk)
	}
}

// checkDeniedBy fails unless err is a denial by the limit called name.
func checkDeniedBy(t *testing.T, err error, name string, max int, window time.Duration) {
	t.Helper()
	var le *runtime.LimitError
	if !errors.As(err, &le) || !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("got %v, want a *runtime.LimitError from %q", err, name)
	}
	if le.Limit.Name != name || le.Limit.Max != max || le.Limit.Window != window || le.Decision.RetryAfter <= 0 {
		t.Fatalf("LimitError = %+v; want limit %q, %d per %v, a positive RetryAfter", le, name, max, window)
	}
}

// checkCostError fails unless err is the runtime's error for a cost that
// no limit can admit, not a denial, and names the cost the wrapper
// computed: the real value as an int64.
func checkCostError(t *testing.T, err error, method string, cost int64) {
	t.Helper()
	if !errors.Is(err, runtime.ErrInvalidCost) || errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("%s with cost %d: got %v, want an error wrapping runtime.ErrInvalidCost that is not ErrLimited", method, cost, err)
	}
	if want := fmt.Sprintf("cost of %d:", cost); !strings.Contains(err.Error(), want) {
		t.Fatalf("%s with cost %d: the error %q does not say %q", method, cost, err, want)
	}
}

// askCounter is a Limiter of the user's own: it checks requests as the
// module's limiters do (runtime.Validate), admits the valid ones, and
// counts how often it is asked.
type askCounter struct{ asked int }

func (a *askCounter) Decide(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	a.asked++
	if err := runtime.Validate(reqs...); err != nil {
		return runtime.Decisions{}, err
	}
	return runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(reqs))}, nil
}

// TestCostZeroSkipsLimiter: the wrapper forwards a call that costs 0
// without asking the limiter, with one limit and with several (where a
// Request's Cost of 0 would mean 1), and hands a negative cost to the
// limiter as it is, which refuses it, so that the wrapped method is not
// called.
func TestCostZeroSkipsLimiter(t *testing.T) {
	ctx := context.Background()
	lim := &askCounter{}
	next := &alertsRecorder{}
	a := NewRateLimitedAlerts(next, lim)
	if err := a.Digest(ctx, "ops@example.com", nil); err != nil {
		t.Fatalf("Digest of no line: %v", err)
	}
	if err := a.Bulk(ctx, "ops@example.com", 0); err != nil {
		t.Fatalf("Bulk of 0: %v", err)
	}
	if lim.asked != 0 || next.digest != 1 || next.bulk != 1 {
		t.Fatalf("calls costing 0: the limiter was asked %d times, the wrapped methods ran %+v; want 0 asks, 1 Digest, 1 Bulk", lim.asked, *next)
	}
	checkCostError(t, a.Adjust(ctx, "ops@example.com", -3), "Adjust", -3)
	if lim.asked != 1 || next.adjust != 0 {
		t.Fatalf("Adjust of -3: the limiter was asked %d times, the wrapped Adjust ran %d times; want 1 and 0", lim.asked, next.adjust)
	}
	// A cost in range goes through.
	if err := a.Bulk(ctx, "ops@example.com", 10); err != nil || lim.asked != 2 || next.bulk != 2 {
		t.Fatalf("Bulk of 10: %v, limiter asked %d times, wrapped Bulk ran %d times; want nil, 2, 2", err, lim.asked, next.bulk)
	}
}

// nopAlerts is an Alerts that does nothing.
type nopAlerts struct{}

func (nopAlerts) Page(context.Context, string) error             { return nil }
func (nopAlerts) Digest(context.Context, string, []string) error { return nil }
func (nopAlerts) Upload(context.Context, string, uint64) error   { return nil }
func (nopAlerts) Adjust(context.Context, string, int64) error    { return nil }
func (nopAlerts) Bulk(context.Context, string, uint64) error     { return nil }

// BenchmarkCost: one limit with a cost.
func BenchmarkCost(b *testing.B) {
	var a Alerts = NewRateLimitedAlerts(nopAlerts{}, allowAll{})
	ctx := context.Background()
	lines := make([]string, 3)
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = a.Digest(ctx, "someone@example.com", lines)
	}
}

// BenchmarkMultiLimit: two limits on one string key.
func BenchmarkMultiLimit(b *testing.B) {
	var a Alerts = NewRateLimitedAlerts(nopAlerts{}, allowAll{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = a.Page(ctx, "someone@example.com")
	}
}

// BenchmarkMultiLimitCost: two limits, each with a uint64 cost.
func BenchmarkMultiLimitCost(b *testing.B) {
	var a Alerts = NewRateLimitedAlerts(nopAlerts{}, allowAll{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sinkErr = a.Bulk(ctx, "someone@example.com", 3)
	}
}
