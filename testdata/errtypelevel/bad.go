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
