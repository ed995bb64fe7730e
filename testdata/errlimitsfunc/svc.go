// Package errlimitsfunc declares RateLimits itself, the name of the
// function the generated file declares for runtime.Overrides.AddLimits.
package errlimitsfunc

import "context"

// Sender sends.
type Sender interface {
	//ratelimit:window=1m max=3
	Send(ctx context.Context) error
}

// RateLimits is the user's own.
func RateLimits() []string { return nil }
