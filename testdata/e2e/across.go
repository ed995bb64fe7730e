package e2e

import (
	"context"

	"github.com/ratelimitgen/ratelimitgen/testmod/e2e/shapes"
)

// The types below have limits of their own and get limited methods of
// package shapes by embedding: each wrapper keeps both.

// Catalog embeds shapes.Store.
type Catalog interface {
	shapes.Store
	//ratelimit:key=sku window=1m max=2
	Lookup(ctx context.Context, sku string) error
}

// Shop embeds *shapes.Auditor.
type Shop struct{ *shapes.Auditor }

// Buy is Shop's own limited method.
//
//ratelimit:key=sku window=1m max=2
func (s *Shop) Buy(ctx context.Context, sku string) error { return nil }

// storeAlias names shapes.Store.
type storeAlias = shapes.Store

// Index embeds shapes.Store through an alias.
type Index interface {
	storeAlias
	//ratelimit:key=term window=1m max=2
	Find(ctx context.Context, term string) error
}

// Memo embeds the generic shapes.Cache with its own type parameter.
type Memo[T any] interface {
	shapes.Cache[T]
	//ratelimit:key=key window=1m max=2
	Forget(ctx context.Context, key string) error
}

// Lot embeds an instantiation of the generic shapes.Pool.
type Lot struct{ *shapes.Pool[int] }

// Count is Lot's own limited method.
//
//ratelimit:window=1m max=2
func (l *Lot) Count(ctx context.Context) error { return nil }

// Holder gets Read by embedding the interface shapes.Store.
type Holder struct{ shapes.Store }

// Desk gets Read through a pointer to Holder.
type Desk struct{ *Holder }

// Open is Desk's own limited method.
//
//ratelimit:window=1m max=2
func (d *Desk) Open(ctx context.Context) error { return nil }

// Counter gets Audit through two levels: shapes.Keeper embeds
// *shapes.Auditor.
type Counter struct{ *shapes.Keeper }

// Tally is Counter's own limited method.
//
//ratelimit:window=1m max=2
func (c *Counter) Tally(ctx context.Context) error { return nil }
