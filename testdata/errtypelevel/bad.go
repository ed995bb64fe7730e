// Package errtypelevel has type-level directives that cannot work.
package errtypelevel

import "context"

// NoCtx has a method without the ctx its type-level key uses, and one
// without an error result.
//
//ratelimit:key=ctx.Value("tenant").(string) window=1m max=10
type NoCtx interface {
	Get(ctx context.Context, id string) error
	Close() error
	Len() int
}

// Costly puts cost= on the type.
//
//ratelimit:cost=2 window=1m max=10
type Costly interface {
	Do(ctx context.Context) error
}

// Plain has no type-level directive to opt out of.
type Plain struct{}

// Do opts out of nothing.
//
//ratelimit:exempt
func (Plain) Do() error { return nil }

// Request names a tenant.
type Request struct {
	Tenant string
	Max    int
}

// Leaky's key uses a parameter that only its first method has: Remove,
// checked after Add, must not see Add's req.
//
//ratelimit:key=req.Tenant window=1m max=10
type Leaky interface {
	Add(ctx context.Context, req Request) error
	Remove(ctx context.Context, id string) error
}

// Planned's max does the same.
//
//ratelimit:window=1m max=req.Max
type Planned interface {
	Add(ctx context.Context, req Request) error
	Remove(ctx context.Context, id string) error
}
