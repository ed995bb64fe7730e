// Package nokey has directives without key=: one limit shared by every
// caller. It also spells windows in every unit.
package nokey

import "context"

// Global is limited as a whole.
type Global interface {
	//ratelimit:window=1s max=100
	Ping(ctx context.Context) error

	//ratelimit:window=1500ms max=1
	Slow(ctx context.Context) error

	//ratelimit:window=2h max=1
	Hourly(ctx context.Context) error

	//ratelimit:window=90s max=1
	Ninety(ctx context.Context) error

	//ratelimit:window=250us max=1
	Micro(ctx context.Context) error
}
