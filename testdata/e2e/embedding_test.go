package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type countingLookups struct {
	lookups
	counts int
}

func (c *countingLookups) Count(context.Context) (int, error) { c.counts++; return 0, nil }

// Types that get a limited method of another package by embedding keep its
// limit, without a directive of their own: a struct embedding
// orders.Service, an interface embedding invoices.Service.
func exerciseEmbedding(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	gw := NewRateLimitedGateway(Gateway{Service: &lookups{}}, lim)
	for n := range 2 {
		if err := gw.Get(ctx, "7"); err != nil {
			t.Fatalf("Gateway.Get %d: %v", n+1, err)
		}
	}
	var le *runtime.LimitError
	if err := gw.Get(ctx, "7"); !errors.As(err, &le) || le.Limit.Name != "github.com/ratelimitgen/ratelimitgen/testmod/e2e/orders.Service.Get" {
		t.Fatalf("3rd Gateway.Get: got %v, want a denial by the orders limit", err)
	}

	next := &countingLookups{}
	l := NewRateLimitedLookups(next, lim)
	for n := range 2 {
		if err := l.Get(ctx, "8"); err != nil {
			t.Fatalf("Lookups.Get %d: %v", n+1, err)
		}
	}
	if err := l.Get(ctx, "8"); !errors.As(err, &le) || le.Limit.Name != "github.com/ratelimitgen/ratelimitgen/testmod/e2e/invoices.Service.Get" {
		t.Fatalf("3rd Lookups.Get: got %v, want a denial by the invoices limit", err)
	}
	for range 5 {
		if _, err := l.Count(ctx); err != nil {
			t.Fatalf("Count has no limit: %v", err)
		}
	}
	if next.n != 2 || next.counts != 5 {
		t.Fatalf("the wrapped Lookups ran Get %d and Count %d times; want 2 and 5", next.n, next.counts)
	}
}

func TestEmbeddingMemory(t *testing.T) {
	exerciseEmbedding(t, memlimit.New())
}

func TestEmbeddingRedis(t *testing.T) {
	exerciseEmbedding(t, newRedisLimiter(t))
}
