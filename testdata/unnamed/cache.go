// Package unnamed has methods whose parameters have no names, or blank
// ones: the wrapper names them to forward them, and a directive names
// unnamed ones as protoc-gen-go-grpc names a client's: ctx, in, in2, ...
package unnamed

import "context"

// Cache is a remote cache.
type Cache interface {
	// Get has only unnamed parameters: the key is the second, in.
	//
	//ratelimit:key=in window=1s max=1000
	Get(context.Context, string) ([]byte, error)

	// Set mixes a named parameter with blank ones, which no directive
	// can name.
	//
	//ratelimit:key=key window=1s max=10
	Set(_ context.Context, key string, _ []byte, _ ...int) error

	// Delete is forwarded.
	Delete(context.Context, ...string) error

	// Watch has no context.Context, but its stream has one, as a gRPC
	// server stream does: the wrapper decides with the stream's context.
	//
	//ratelimit:key=in+":"+in2.Topic() window=1s max=5 cost=in3
	Watch(string, Stream, int) error
}

// Stream is a stream of changes, like a gRPC server stream.
type Stream interface {
	Context() context.Context
	Topic() string
	Send(key string) error
}
