// want package:"hasDirectives"

// Package base has a limited interface, and its generated file.
package base

import "context"

// Notifier sends messages.
type Notifier interface {
	//ratelimit:key=email window=60s max=3
	SendCode(ctx context.Context, email string) error
}
