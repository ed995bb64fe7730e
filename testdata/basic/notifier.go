// Package basic is the example of the issue: a directive on an interface
// method, and a method without one that is forwarded unchanged.
package basic

import (
	"context"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// SendCodeRequest asks for a login code.
type SendCodeRequest struct {
	Email string
}

// Notifier sends messages.
type Notifier interface {
	// SendCode e-mails a login code.
	//
	//ratelimit:key=req.Email window=60s max=3
	SendCode(ctx context.Context, req SendCodeRequest) error

	// Status is not rate-limited.
	Status(ctx context.Context) (string, error)
}

// NewDefault calls the generated constructor: the package must load while
// the generated file is excluded.
func NewDefault(n Notifier, l runtime.Limiter) Notifier {
	return NewRateLimitedNotifier(n, l)
}
