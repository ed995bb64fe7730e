// Package base declares the limited types that packages embedacross and
// mid embed.
package base

import "context"

// Store is an interface with a limited method.
type Store interface {
	//ratelimit:key=id window=1m max=2
	Read(ctx context.Context, id string) error
}

// Auditor is a concrete type with a limited method.
type Auditor struct{ N int }

// Audit is limited here and wherever Auditor is embedded.
//
//ratelimit:key=id window=1m max=2
func (a *Auditor) Audit(ctx context.Context, id string) error { return nil }

// Cache is a generic interface with a limited method.
type Cache[T any] interface {
	//ratelimit:key=key window=1m max=2
	Get(ctx context.Context, key string) (T, error)
}

// Pool is a generic concrete type with a limited method.
type Pool[T any] struct{ items []T }

// Take is limited for every instantiation of Pool.
//
//ratelimit:key=owner window=1m max=2
func (p *Pool[T]) Take(ctx context.Context, owner string) (T, error) {
	var zero T
	return zero, nil
}

// Metered counts every call of its methods with a type-level limit.
//
//ratelimit:window=1m max=2
type Metered interface {
	Ping(ctx context.Context) error
}
