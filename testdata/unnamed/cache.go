// Package unnamed has methods whose parameters have no names, or blank
// ones: the wrapper names them to forward them.
package unnamed

import "context"

// Cache is a remote cache.
type Cache interface {
	// Get has only unnamed parameters, so its key can name none: it is
	// one limit for all callers.
	//
	//ratelimit:window=1s max=1000
	Get(context.Context, string) ([]byte, error)

	// Set mixes a named parameter with blank ones.
	//
	//ratelimit:key=key window=1s max=10
	Set(_ context.Context, key string, _ []byte, _ ...int) error

	// Delete is forwarded.
	Delete(context.Context, ...string) error
}
