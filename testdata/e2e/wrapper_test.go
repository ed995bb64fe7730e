package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// counting is a Limiter wrapped the usual Go way, by embedding: it
// overrides Decide, the Limiter's one method, and so sees every call of
// the generated code, whatever its shape. (With the first runtime API,
// such a wrapper failed every call with a cost or several limits.)
type counting struct {
	runtime.Limiter
	n atomic.Int64
}

func (c *counting) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	c.n.Add(1)
	return c.Limiter.Decide(ctx, reqs...)
}

// TestEmbeddingWrapper runs one limit, a cost, several limits and several
// limits with costs through a wrapper that embeds runtime.Limiter: each
// call is decided once, through the wrapper, with the limits of the
// wrapped limiter.
func TestEmbeddingWrapper(t *testing.T) {
	ctx := context.Background()
	lim := &counting{Limiter: memlimit.New()}
	asked := func(want int64) {
		t.Helper()
		if got := lim.n.Swap(0); got != want {
			t.Fatalf("the wrapper was asked %d times; want %d", got, want)
		}
	}

	// One limit: Notifier.SendCode, 3 a minute.
	n := NewRateLimitedNotifier(newRecorder(), lim)
	for i := range 3 {
		if err := n.SendCode(ctx, SendCodeRequest{Email: "a@example.com"}); err != nil {
			t.Fatalf("SendCode call %d: %v", i+1, err)
		}
	}
	checkDenied(t, n.SendCode(ctx, SendCodeRequest{Email: "a@example.com"}), here+"Notifier.SendCode")
	asked(4)

	next := &alertsRecorder{}
	a := NewRateLimitedAlerts(next, lim)

	// A cost: Alerts.Digest, a bucket of 4.
	if err := a.Digest(ctx, "ops@example.com", make([]string, 4)); err != nil {
		t.Fatalf("Digest of 4 lines: %v", err)
	}
	checkDeniedBy(t, a.Digest(ctx, "ops@example.com", make([]string, 1)), here+"Alerts.Digest", 10, time.Minute)
	checkCostError(t, a.Digest(ctx, "ops@example.com", make([]string, 5)), "Digest", 5)
	asked(3)

	// Several limits: Alerts.Page, 3 a minute and 5 an hour.
	for i := range 3 {
		if err := a.Page(ctx, "ops@example.com"); err != nil {
			t.Fatalf("Page call %d: %v", i+1, err)
		}
	}
	checkDeniedBy(t, a.Page(ctx, "ops@example.com"), here+"Alerts.Page", 3, time.Minute)
	asked(4)

	// Several limits with costs: Alerts.Bulk, 10 a minute per address and
	// 100 a minute in all.
	if err := a.Bulk(ctx, "ops@example.com", 10); err != nil {
		t.Fatalf("Bulk of 10: %v", err)
	}
	checkDeniedBy(t, a.Bulk(ctx, "ops@example.com", 1), here+"Alerts.Bulk", 10, time.Minute)
	asked(2)

	if next.digest != 1 || next.page != 3 || next.bulk != 1 {
		t.Fatalf("the wrapped methods ran %+v; want 1 Digest, 3 Page, 1 Bulk", *next)
	}
}
