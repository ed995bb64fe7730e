// Package tenant tells which tenant a call is for.
package tenant

import "context"

type key struct{}

// From returns the tenant of ctx, or "".
func From(ctx context.Context) string {
	s, _ := ctx.Value(key{}).(string)
	return s
}
