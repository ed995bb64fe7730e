//ratelimit:window=1m max=3

// Package errplace has directives where they do not belong.
package errplace

import "io"

// Plain is a function, not a method.
//
//ratelimit:window=1m max=3
func Plain() error { return nil }

// T is a type.
//
//ratelimit:window=1m max=3
type T struct {
	//ratelimit:window=1m max=3
	Field int
}

// V is a variable.
//
//ratelimit:window=1m max=3
var V = 1

// I has a directive on an embedded interface and one after a method.
type I interface {
	//ratelimit:window=1m max=3
	io.Reader

	Do() error //ratelimit:window=1m max=3
}

// S has a field of an interface literal type.
type S struct {
	f interface {
		//ratelimit:window=1m max=3
		M() error
	}
}

func body() {
	//ratelimit:window=1m max=3
	type local interface {
		//ratelimit:window=1m max=3
		M() error
	}
}

//ratelimit:window=1m max=3

// Detached is separated from the directive by a blank line.
func (t T) Detached() error { return nil }
