// Package errparse has directives whose options are wrong.
package errparse

import "context"

// Bad has one mistake per method.
type Bad interface {
	//ratelimit:key=id windw=1m max=3
	Unknown(ctx context.Context, id string) error

	//ratelimit:key=id window=1m window=2m max=3
	Duplicate(ctx context.Context, id string) error

	//ratelimit:key=id max=3
	NoWindow(ctx context.Context, id string) error

	//ratelimit:key=id window=soon max=3
	BadWindow(ctx context.Context, id string) error

	//ratelimit:key=id window=-1s max=3
	NegativeWindow(ctx context.Context, id string) error

	//ratelimit:key=id window=1m max=0
	ZeroMax(ctx context.Context, id string) error

	//ratelimit:key=id window=1m
	NoMax(ctx context.Context, id string) error

	//ratelimit:key=id+ window=1m max=3
	BadKey(ctx context.Context, id string) error

	//ratelimit:key=id window=1m max=3 cots=2
	Misspelt(ctx context.Context, id string) error

	//ratelimit:key=id window=1m max=3 mode=off
	Disabled(ctx context.Context, id string) error

	//ratelimit:key=id window=1m max=3 mode=dryrun
	DryRun(ctx context.Context, id string) error
}
