// Package a shares the name "shared" with package b under other rules.
package a

import "context"

// Service is limited under a name that b uses too.
type Service interface {
	//ratelimit:key=id name=shared window=1m max=2
	Get(ctx context.Context, id string) error

	//ratelimit:key=id name=agreeing window=1m max=2 algo=token-bucket
	List(ctx context.Context, id string) error
}

func tenant(ctx context.Context) string { return "" }

// Shared has a type-level limit named "typed", keyed by a string.
//
//ratelimit:key=tenant(ctx) name=typed window=1m max=2
type Shared interface {
	Do(ctx context.Context) error
}
