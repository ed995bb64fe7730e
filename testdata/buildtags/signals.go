//go:build !windows

package buildtags

import "context"

// Signals exists wherever Unix signals do, by its //go:build line.
type Signals interface {
	//ratelimit:key=sig window=1m max=5
	Raise(ctx context.Context, sig int) error
}
