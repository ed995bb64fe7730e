// Package wait has limits with wait=: a denied call waits for room, up to
// the wait and the context's deadline, instead of failing at once.
package wait

import "context"

// Client calls a third-party API at most as often as it allows.
type Client interface {
	//ratelimit:window=1s max=10 wait=2s
	Call(ctx context.Context, op string) error

	//ratelimit:key=op window=1m max=3 wait=500ms
	//ratelimit:window=1s max=100 name=Client.Fetch.total
	Fetch(ctx context.Context, op string) ([]byte, error)

	//ratelimit:window=1s max=1 wait=1s
	NoContext(op string) error
}
