// Package typelevel has type-level directives: one limit that every method
// of a type counts against, on top of each method's own.
package typelevel

import "context"

type tenantKey struct{}

// Tenant returns the tenant of ctx.
func Tenant(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}

// Store counts every call per tenant, and Get per id too.
//
//ratelimit:key=Tenant(ctx) window=1m max=100
type Store interface {
	//ratelimit:key=id window=1m max=5
	Get(ctx context.Context, id string) ([]byte, error)

	Put(ctx context.Context, id string, b []byte) error

	// Health is not counted.
	//
	//ratelimit:exempt
	Health(ctx context.Context) error
}

// Client is a concrete type with two type-level limits.
//
//ratelimit:window=1s max=10
//ratelimit:key=Tenant(ctx) window=1m max=50 name=Client.perTenant algo=gcra
type Client struct{}

// Call is counted by both of Client's limits.
func (c *Client) Call(ctx context.Context, op string) error { return nil }

// Name has no error result to report a denial with: it opts out.
//
//ratelimit:exempt
func (c *Client) Name() string { return "client" }

// Folded keys every method on a package the file does not import, which
// each method's check finds again.
//
//ratelimit:key=strings.ToLower(Tenant(ctx)) window=1m max=10
type Folded interface {
	A(ctx context.Context) error
	B(ctx context.Context) error
}

// Queue waits up to a second for room on every method, those settled by
// their outcome or holding a permit too.
//
//ratelimit:key=Tenant(ctx) window=1m max=20 wait=1s
type Queue interface {
	// Push counts failed pushes only.
	//
	//ratelimit:key=Tenant(ctx) window=1m max=5 refund=err == nil name=Queue.Push.failed
	Push(ctx context.Context, item string) error

	// Drain holds one of a tenant's permits while it runs.
	//
	//ratelimit:key=Tenant(ctx) concurrency=1 name=Queue.Drain.inflight
	Drain(ctx context.Context) (int, error)
}
