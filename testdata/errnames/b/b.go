// Package b reuses the names of package a: "shared" with another window,
// key type or mode (an error), "agreeing" with the same rules (one quota).
package b

import "context"

// Service is limited under the names that a uses.
type Service interface {
	//ratelimit:key=id name=shared window=1h max=2
	Get(ctx context.Context, id int) error

	//ratelimit:key=id name=agreeing window=1m max=2 algo=token-bucket burst=2
	List(ctx context.Context, id string) error

	//ratelimit:key=id name=shared window=1m max=2 algo=gcra
	Put(ctx context.Context, id string) error

	//ratelimit:key=id name=typed window=1m max=2
	Typed(ctx context.Context, id int) error

	//ratelimit:key=id name=shared window=1m max=2 mode=shadow
	Shadow(ctx context.Context, id string) error
}
