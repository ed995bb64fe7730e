// Package shapes declares limited types that package e2e embeds in every
// shape; go generate runs the generator in e2e alone.
package shapes

import "context"

// Store is an interface with a limited method.
type Store interface {
	//ratelimit:key=id window=1m max=2
	Read(ctx context.Context, id string) error
}

// Auditor is a concrete type with a limited method.
type Auditor struct{ N int }

// Audit is limited wherever Auditor is embedded.
//
//ratelimit:key=id window=1m max=2
func (a *Auditor) Audit(ctx context.Context, id string) error { a.N++; return nil }

// Cache is a generic interface with a limited method.
type Cache[T any] interface {
	//ratelimit:key=key window=1m max=2
	Get(ctx context.Context, key string) (T, error)
}

// Pool is a generic concrete type with a limited method.
type Pool[T any] struct{ N int }

// Take is limited for every instantiation of Pool.
//
//ratelimit:key=owner window=1m max=2
func (p *Pool[T]) Take(ctx context.Context, owner string) (T, error) {
	p.N++
	var zero T
	return zero, nil
}

// Keeper embeds *Auditor, for a second level of embedding.
type Keeper struct{ *Auditor }
