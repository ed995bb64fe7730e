// Package bad has one mistake per method, as a developer makes them.
package bad

import "context"

// Order has a field that cannot be a key.
type Order struct {
	ID    string
	Total float64
}

// Service has the mistakes.
type Service interface {
	//ratelimit:key=emial window=1m max=3
	Typo(ctx context.Context, email string) error

	//ratelimit:key=order.Total window=1m max=3
	Float(ctx context.Context, order Order) error

	//ratelimit:key=id windw=1m max=3
	Option(ctx context.Context, id string) error

	//ratelimit:key=id window=soon max=3
	Window(ctx context.Context, id string) error

	//ratelimit:key=id window=1m max=0
	Max(ctx context.Context, id string) error

	// ratelimit:key=id window=1m max=3
	Spaced(ctx context.Context, id string) error
}
