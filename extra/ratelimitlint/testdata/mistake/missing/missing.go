// Package missing has a directive and no generated file.
package missing

import "context"

// Notifier sends messages.
type Notifier interface {
	//ratelimit:key=email window=60s max=3
	SendCode(ctx context.Context, email string) error
}
