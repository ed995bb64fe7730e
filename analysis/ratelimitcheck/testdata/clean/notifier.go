// want package:"hasDirectives"

// Package clean has a directive and its generated file, up to date: the
// analyzer reports nothing, although the package it is given declares the
// wrapper that the generator generates.
package clean

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
	//ratelimit:key=req.Email window=60s max=3
	SendCode(ctx context.Context, req SendCodeRequest) error
}

// NewDefault calls the generated constructor.
func NewDefault(n Notifier, l runtime.Limiter) Notifier {
	return NewRateLimitedNotifier(n, l)
}
