// Package errwrap has types that cannot be wrapped, and a type error.
package errwrap

import (
	"testing"

	"github.com/ratelimitgen/ratelimitgen/testmod/errwrap/hidden"
)

// Thing's wrapper name is taken.
type Thing interface {
	//ratelimit:window=1m max=3
	Do() error
}

// RateLimitedThing is declared by the user.
type RateLimitedThing struct{}

// Num has type terms: it is a constraint, not a type of values.
type Num interface {
	~int

	//ratelimit:window=1m max=3
	Check() error
}

// Test embeds testing.TB, which has an unexported method.
type Test interface {
	testing.TB

	//ratelimit:window=1m max=3
	Do() error
}

// Wraps embeds an interface whose method uses an unexported type.
type Wraps interface {
	hidden.Getter

	//ratelimit:window=1m max=3
	Do() error
}

var broken int = "not an int"
