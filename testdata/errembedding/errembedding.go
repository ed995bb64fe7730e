// Package errembedding embeds a type whose limit its wrapper could not
// spell.
package errembedding

import "github.com/ratelimitgen/ratelimitgen/testmod/errembedding/inner"

// Outer gets Get by embedding.
type Outer struct {
	*inner.Svc
}
