// Package mode rolls limits out in shadow mode: a shadow limit is decided
// and recorded like any other, but a call it would deny goes through.
package mode

import "context"

// Request is a search.
type Request struct {
	User  string
	Query string
}

// Search has a limit being rolled out and one that already bites.
type Search interface {
	// Query watches a new per-user limit before enforcing it.
	//
	//ratelimit:key=req.User window=1m max=30 mode=shadow
	Query(ctx context.Context, req Request) error

	// Suggest enforces its per-user limit, written out, and shadows a
	// lower daily one.
	//
	//ratelimit:key=req.User window=1m max=60 mode=enforce
	//ratelimit:key=req.User window=24h max=1000 algo=sliding-window name=Search.Suggest.daily mode=shadow
	Suggest(ctx context.Context, req Request) ([]string, error)
}

// Index shadows a type-level limit on every method.
//
//ratelimit:window=1s max=500 algo=gcra burst=50 mode=shadow
type Index interface {
	Add(ctx context.Context, doc string) error
	Remove(ctx context.Context, doc string) error
}
