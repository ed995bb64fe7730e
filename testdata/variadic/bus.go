// Package variadic has variadic methods, limited and forwarded.
package variadic

import "context"

// Bus publishes messages.
type Bus interface {
	// Publish is limited per topic; msgs are forwarded with ....
	//
	//ratelimit:key=topic window=1s max=100
	Publish(ctx context.Context, topic string, msgs ...[]byte) error

	// PublishAll is limited per number of topics.
	//
	//ratelimit:key=len(topics) window=1s max=10
	PublishAll(ctx context.Context, topics ...string) (int, error)

	// Subscribe is forwarded.
	Subscribe(topics ...string) (<-chan []byte, error)
}
