package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type tenantCalls struct{ get, list, ping int }

func (c *tenantCalls) Get(context.Context, string) error { c.get++; return nil }
func (c *tenantCalls) List(context.Context) error        { c.list++; return nil }
func (c *tenantCalls) Ping(context.Context) error        { c.ping++; return nil }

// A type-level limit counts every method's calls per tenant, all or
// nothing with each method's own limits; an exempt method is not counted.
func exerciseTypeLevel(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	a := WithTenant(context.Background(), "a")
	next := &tenantCalls{}
	s := NewRateLimitedTenants(next, lim)
	deniedBy := func(err error, name string) {
		t.Helper()
		var le *runtime.LimitError
		if !errors.As(err, &le) || le.Limit.Name != here+name {
			t.Fatalf("got %v, want a denial by %s", err, here+name)
		}
	}
	for n := range 2 {
		if err := s.Get(a, "x"); err != nil {
			t.Fatalf("Get %d: %v", n+1, err)
		}
	}
	// Get's own limit denies: the tenant's count does not move.
	deniedBy(s.Get(a, "x"), "Tenants.Get")
	if err := s.List(a); err != nil {
		t.Fatalf("List, the tenant's third call: %v", err)
	}
	deniedBy(s.List(a), "Tenants")
	deniedBy(s.Get(a, "y"), "Tenants")
	for range 5 {
		if err := s.Ping(a); err != nil {
			t.Fatalf("Ping is exempt: %v", err)
		}
	}
	if err := s.List(WithTenant(context.Background(), "b")); err != nil {
		t.Fatalf("List for another tenant: %v", err)
	}
	if next.get != 2 || next.list != 2 || next.ping != 5 {
		t.Fatalf("the wrapped methods ran %+v; want 2 Get, 2 List, 5 Ping", *next)
	}
}

func TestTypeLevelMemory(t *testing.T) {
	exerciseTypeLevel(t, memlimit.New())
}

func TestTypeLevelRedis(t *testing.T) {
	exerciseTypeLevel(t, newRedisLimiter(t))
}
