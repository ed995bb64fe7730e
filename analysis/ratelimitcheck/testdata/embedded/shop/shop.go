// Package shop has no directive of its own, but embeds base's limited
// interface, so it needs a wrapper, which it lacks: the analyzer knows it
// from the fact that base has directives.
package shop // want `^ratelimit_gen.go is missing: run go generate to write it$`

import "github.com/ratelimitgen/ratelimitgen/analysis/ratelimitcheck/testdata/embedded/base"

// Shop notifies its customers.
type Shop interface {
	base.Notifier
	Close() error
}
