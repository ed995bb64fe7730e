package redislimit

import "github.com/ratelimitgen/ratelimitgen/runtime"

// algorithmOf returns l's algorithm, resolving the zero value.
func algorithmOf(l runtime.Limit) runtime.Algorithm {
	if l.Algorithm == "" {
		return runtime.SlidingLog
	}
	return l.Algorithm
}
