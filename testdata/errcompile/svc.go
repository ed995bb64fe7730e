// Package errcompile does not compile: the generator says that this, not
// its directives, stops it.
package errcompile

import "context"

// Svc is limited.
type Svc interface {
	//ratelimit:window=1m max=3
	Do(ctx context.Context) error
}

var broken int = "not an int"
