// Package errmethod has directives on methods that cannot be wrapped as
// they are.
package errmethod

// M has methods without an error result, and one with two directives.
type M interface {
	//ratelimit:window=1m max=3
	NoResult()

	//ratelimit:window=1m max=3
	NotError() (int, bool)

	//ratelimit:window=1m max=3
	//ratelimit:window=1h max=100
	Two() error
}

// CustomErr is an error type, but not error itself.
type CustomErr struct{}

func (*CustomErr) Error() string { return "custom" }

// C is a concrete type.
type C struct{}

// Custom returns *CustomErr, which cannot hold a *runtime.LimitError.
//
//ratelimit:window=1m max=3
func (C) Custom() *CustomErr { return nil }
