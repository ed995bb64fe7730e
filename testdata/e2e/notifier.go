// Package e2e is generated, built and run by the golden test: its test
// calls the wrapper on the memory limiter and on a real Redis.
package e2e

import (
	"context"
	"time"

	"github.com/ratelimitgen/ratelimitgen/testmod/e2e/invoices"
	"github.com/ratelimitgen/ratelimitgen/testmod/e2e/orders"
)

// SendCodeRequest asks for a login code.
type SendCodeRequest struct {
	Email string
}

// Account is charged.
type Account struct {
	Tenant string
	ID     int64
}

// Notifier sends messages.
type Notifier interface {
	//ratelimit:key=req.Email window=60s max=3
	SendCode(ctx context.Context, req SendCodeRequest) error

	//ratelimit:key=id window=60s max=3
	Lookup(ctx context.Context, id int64) (string, error)

	//ratelimit:key=acct.Tenant,acct.ID window=60s max=3
	Charge(ctx context.Context, acct Account, cents int) (int, error)
}

// Alerts has several limits on one method, and costs.
type Alerts interface {
	// Page must pass 3 per minute and 5 per hour for the same address.
	//
	//ratelimit:key=to window=1m max=3
	//ratelimit:key=to window=1h max=5 name=Alerts.Page.hourly
	Page(ctx context.Context, to string) error

	// Digest costs one token per line, from a bucket of 4.
	//
	//ratelimit:key=to cost=len(lines) window=1m max=10 algo=token-bucket burst=4
	Digest(ctx context.Context, to string, lines []string) error

	// Upload costs its size, a uint64, in bytes.
	//
	//ratelimit:key=to cost=size window=1m max=1000 algo=sliding-window
	Upload(ctx context.Context, to string, size uint64) error

	// Adjust costs an int64, which may be negative or, on a 32-bit
	// platform, beyond int's range.
	//
	//ratelimit:key=to cost=units window=1m max=10 algo=fixed-window
	Adjust(ctx context.Context, to string, units int64) error

	// Bulk costs n against a per-address limit and a total one.
	//
	//ratelimit:key=to cost=n window=1m max=10 algo=fixed-window
	//ratelimit:cost=n window=1m max=100 algo=gcra name=Alerts.Bulk.total
	Bulk(ctx context.Context, to string, n uint64) error
}

// Slots books time slots: one booking per instant, however the time.Time
// was built.
type Slots interface {
	//ratelimit:key=at window=1m max=1
	Book(ctx context.Context, at time.Time) error

	//ratelimit:key=room,at window=1m max=1
	BookRoom(ctx context.Context, room string, at time.Time) error
}

// Gateway gets Get, limited in package orders, by embedding an
// orders.Service: its wrapper keeps the limit.
type Gateway struct {
	orders.Service
}

// Lookups embeds invoices.Service: Get keeps the invoices limit, Count has
// none.
type Lookups interface {
	invoices.Service
	Count(ctx context.Context) (int, error)
}

type tenantKey struct{}

// WithTenant returns ctx for tenant.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantOf returns the tenant of ctx.
func TenantOf(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}

// Tenants counts every call per tenant, and Get per id too; Ping opts
// out.
//
//ratelimit:key=TenantOf(ctx) window=1m max=3
type Tenants interface {
	//ratelimit:key=id window=1m max=2
	Get(ctx context.Context, id string) error

	List(ctx context.Context) error

	//ratelimit:exempt
	Ping(ctx context.Context) error
}

// Outbound calls a third-party API: denied calls wait for room (wait=).
type Outbound interface {
	//ratelimit:window=50ms max=1 wait=10s
	Call(ctx context.Context) error

	//ratelimit:window=1h max=1 wait=10ms
	Short(ctx context.Context) error

	//ratelimit:window=1h max=1 wait=2h
	Long(ctx context.Context) error

	//ratelimit:key=id window=50ms max=1 wait=10s
	//ratelimit:window=1h max=100 name=Outbound.Multi.total
	Multi(ctx context.Context, id string) error
}

// Cache is generic. Every instantiation shares the limit of Cache.Get: a
// limit belongs to the declaration, and its key is what separates counts.
type Cache[V any] interface {
	//ratelimit:key=key window=1m max=2
	Get(ctx context.Context, key string) (V, error)
}
