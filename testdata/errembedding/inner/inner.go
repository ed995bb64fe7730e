// Package inner keys a limit on an unexported function.
package inner

import "context"

func clean(id string) string { return id }

// Svc is embedded by package errembedding.
type Svc struct{}

// Get keys on clean, which other packages cannot call.
//
//ratelimit:key=clean(id) window=1m max=2
func (s *Svc) Get(ctx context.Context, id string) error { return nil }
