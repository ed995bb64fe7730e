// Package base declares a limited interface.
package base

import "context"

// Store is an interface with a limited method.
type Store interface {
	//ratelimit:key=id window=1m max=2
	Read(ctx context.Context, id string) error
}
