// Package errundefined has a parameter of a type that is not defined: the
// generator reports the package's error and the key it cannot type, and
// does not panic.
package errundefined

import "context"

// Svc is limited.
type Svc interface {
	//ratelimit:key=req.TenantID window=1m max=3
	Get(ctx context.Context, req Undefined) error
}
