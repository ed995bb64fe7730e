// Package nocontext has methods whose first parameter is not a
// context.Context: the wrapper passes context.Background() to the limiter.
package nocontext

import "context"

// Jobs runs jobs.
type Jobs interface {
	//ratelimit:key=id window=1s max=1
	Run(id string) error

	// Only a first parameter counts as the call's context.
	//
	//ratelimit:key=id window=1s max=1
	Later(id string, ctx context.Context) error

	//ratelimit:window=1s max=1
	Tick() error
}
