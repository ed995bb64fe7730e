// Package cost charges calls by their size with cost=.
package cost

import (
	bytes2 "bytes"
	"context"
)

var _ = bytes2.Count

// Item is sent in batches.
type Item struct{ ID string }

// Upload describes a file.
type Upload struct {
	Owner string
	Size  uint64
	Parts int64
	Small uint8
}

// weight is the cost of a heavy call, a constant.
const weight = 3

// units is a typed constant.
const units uint16 = 2

// Batcher sends batches.
type Batcher interface {
	// Send costs one unit per item: an int, passed as it is.
	//
	//ratelimit:key=tenant cost=len(items) window=1m max=1000 algo=sliding-window
	Send(ctx context.Context, tenant string, items []Item) error

	// Store costs the upload's size in bytes, a uint64 that is clamped.
	//
	//ratelimit:key=up.Owner cost=up.Size window=1h max=1_000_000_000 algo=sliding-window
	Store(ctx context.Context, up Upload) error

	// Parts costs an int64; the key is composite.
	//
	//ratelimit:key=up.Owner,up.Parts cost=up.Parts window=1m max=100 algo=gcra burst=50
	Parts(ctx context.Context, up Upload) error

	// Small costs a uint8, which always fits.
	//
	//ratelimit:cost=up.Small window=1m max=300 algo=fixed-window
	Small(ctx context.Context, up Upload) error

	// Heavy costs a constant, checked against max at generate time.
	//
	//ratelimit:key=tenant cost=weight window=1m max=10 algo=fixed-window
	Heavy(ctx context.Context, tenant string) error

	// Typed costs a typed constant, converted to int.
	//
	//ratelimit:key=tenant cost=units window=1m max=10 algo=fixed-window
	Typed(ctx context.Context, tenant string) error

	// Count uses an aliased import in its cost, and parameters named like
	// the generated code's identifiers.
	//
	//ratelimit:key=n cost=bytes2.Count(b, sep)+1 window=1m max=10 algo=fixed-window
	Count(n string, b, sep []byte) (int, error)
}

// Queue is generic: its cost is a type parameter.
type Queue[N ~int32 | ~uint32] interface {
	//ratelimit:cost=n window=1s max=100 algo=token-bucket burst=200
	Push(ctx context.Context, n N) error
}

// Meter is a concrete type.
type Meter struct{}

// Record costs an int through a method call on a parameter.
//
//ratelimit:key=name cost=len(name) window=1s max=64 algo=sliding-window
func (m *Meter) Record(name string) error { return nil }
