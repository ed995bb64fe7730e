// Package generic has a generic interface and a generic concrete type.
package generic

import (
	"context"
	"fmt"
)

// Number is a constraint with a type union.
type Number interface {
	~int | ~int64 | ~float64
}

// Store keeps values of type V under keys of type K.
type Store[K comparable, V fmt.Stringer] interface {
	// Get returns a type parameter: a denied call returns its zero value.
	//
	//ratelimit:key=id window=1m max=5
	Get(ctx context.Context, id string) (V, error)

	// Put is limited per item, a type parameter that implements
	// fmt.Stringer through its constraint.
	//
	//ratelimit:key=item window=1m max=5
	Put(ctx context.Context, k K, item V) error

	// Take costs one unit per key and returns a type parameter: a call
	// whose cost is refused returns its zero value too.
	//
	//ratelimit:cost=len(ids) window=1m max=5
	Take(ctx context.Context, ids []K) (V, error)

	// Keys is forwarded.
	Keys() []K
}

// Counter adds numbers of any kind.
type Counter[N Number, M interface{ ~string }] struct {
	total N
}

// Add is limited per label.
//
//ratelimit:key=label window=1s max=10
func (c *Counter[N, M]) Add(label M, n N) (N, error) {
	c.total += n
	return c.total, nil
}

// Sum uses other names for the receiver's type parameters.
//
//ratelimit:window=1s max=1
func (c *Counter[A, B]) Sum(labels ...B) (A, map[B]A, error) { return c.total, nil, nil }
