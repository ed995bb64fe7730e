// want package:"hasDirectives"

// Package stale has a directive whose max changed after its file was
// generated.
package stale

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
	// want +1 `^ratelimit_gen.go is out of date: run go generate to update it$`
	//ratelimit:key=req.Email window=60s max=5
	SendCode(ctx context.Context, req SendCodeRequest) error
}

// NewDefault calls the generated constructor.
func NewDefault(n Notifier, l runtime.Limiter) Notifier {
	return NewRateLimitedNotifier(n, l)
}
