// Package embedacross has types with limits of their own that get limited
// methods of other packages by every shape of embedding. go generate runs
// the generator in this package alone: each wrapper must keep the
// embedded methods' limits all the same.
package embedacross

import (
	"context"

	"github.com/ratelimitgen/ratelimitgen/testmod/embedacross/base"
	"github.com/ratelimitgen/ratelimitgen/testmod/embedacross/mid"
)

// Catalog embeds base.Store: Read keeps its limit.
type Catalog interface {
	base.Store
	//ratelimit:key=sku window=1m max=2
	Lookup(ctx context.Context, sku string) error
}

// Shop embeds *base.Auditor: Audit (and Trace, on Linux) keep their
// limits.
type Shop struct{ *base.Auditor }

// Buy is Shop's own limited method.
//
//ratelimit:key=sku window=1m max=2
func (s *Shop) Buy(ctx context.Context, sku string) error { return nil }

// StoreAlias names base.Store.
type StoreAlias = base.Store

// Index embeds base.Store through an alias.
type Index interface {
	StoreAlias
	//ratelimit:key=term window=1m max=2
	Find(ctx context.Context, term string) error
}

// Strings names an instantiation of the generic base.Cache.
type Strings = base.Cache[string]

// Names embeds a generic interface through an alias of its instance.
type Names interface {
	Strings
	//ratelimit:window=1m max=2
	Reset(ctx context.Context) error
}

// Memo is generic and embeds the generic base.Cache with its own type
// parameter.
type Memo[T any] interface {
	base.Cache[T]
	//ratelimit:key=key window=1m max=2
	Forget(ctx context.Context, key string) error
}

// Lot embeds an instantiation of the generic concrete base.Pool.
type Lot struct{ *base.Pool[int] }

// Count is Lot's own limited method.
//
//ratelimit:window=1m max=2
func (l *Lot) Count(ctx context.Context) error { return nil }

// Holder has base.Store's Read by embedding the interface.
type Holder struct{ base.Store }

// Desk gets Read through a pointer to Holder, whose embedded field is
// interface-typed.
type Desk struct{ *Holder }

// Open is Desk's own limited method.
//
//ratelimit:window=1m max=2
func (d *Desk) Open(ctx context.Context) error { return nil }

// Counter gets Audit through two levels: mid.Keeper embeds *base.Auditor.
type Counter struct{ *mid.Keeper }

// Tally is Counter's own limited method.
//
//ratelimit:window=1m max=2
func (c *Counter) Tally(ctx context.Context) error { return nil }

// Archive gets Read through two levels of interfaces: mid.Reader embeds
// base.Store.
type Archive interface {
	mid.Reader
	//ratelimit:key=id window=1m max=2
	Restore(ctx context.Context, id string) error
}

// Probe embeds base.Metered, whose type-level limit counts Ping.
type Probe interface {
	base.Metered
	//ratelimit:window=1m max=2
	Check(ctx context.Context) error
}
