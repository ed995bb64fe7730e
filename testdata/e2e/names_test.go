package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/testmod/e2e/invoices"
	"github.com/ratelimitgen/ratelimitgen/testmod/e2e/orders"
)

type lookups struct{ n int }

func (l *lookups) Get(context.Context, string) error { l.n++; return nil }

// orders.Service.Get and invoices.Service.Get have the same Type.Method:
// on one limiter, the calls of one must not count against the other.
func exerciseNames(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	o := orders.NewRateLimitedService(&lookups{}, lim)
	i := invoices.NewRateLimitedService(&lookups{}, lim)
	for n := range 2 {
		if err := o.Get(ctx, "42"); err != nil {
			t.Fatalf("order lookup %d: %v", n+1, err)
		}
	}
	if err := o.Get(ctx, "42"); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("3rd order lookup: got %v, want a denial", err)
	}
	for n := range 2 {
		if err := i.Get(ctx, "42"); err != nil {
			t.Fatalf("invoice lookup %d after the orders' limit was used up: %v", n+1, err)
		}
	}
	var le *runtime.LimitError
	if err := i.Get(ctx, "42"); !errors.As(err, &le) || le.Limit.Name != "github.com/ratelimitgen/ratelimitgen/testmod/e2e/invoices.Service.Get" {
		t.Fatalf("3rd invoice lookup: got %v, want a denial by the invoices' own limit", err)
	}
}

func TestNamesMemory(t *testing.T) {
	exerciseNames(t, memlimit.New())
}

func TestNamesRedis(t *testing.T) {
	exerciseNames(t, newRedisLimiter(t))
}
