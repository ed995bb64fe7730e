// Package embedding has types that get limited methods by embedding, from
// another package and from this one, without a directive of their own:
// each gets a wrapper that keeps the methods' limits.
package embedding

import (
	"context"

	"github.com/ratelimitgen/ratelimitgen/testmod/embedding/base"
)

// Server gets Get, limited in package base, from the embedded Service.
type Server struct {
	*base.Service
	Name string
}

// Cache embeds base.Store: Load keeps its limit, Flush is forwarded.
type Cache interface {
	base.Store
	Flush(ctx context.Context) error
}

// Local has a limited method.
type Local interface {
	//ratelimit:window=1s max=1
	Ping(ctx context.Context) error
}

// Outer embeds Local from this package.
type Outer interface {
	Local
	Close() error
}

// Job gets Do, counted by base.Tenanted's type-level limit, by embedding.
type Job struct {
	base.Tenanted
}

// Counted counts every call of its methods.
//
//ratelimit:window=1s max=20
type Counted interface {
	Run(ctx context.Context) error
}

// Runner embeds Counted: Run keeps Counted's type-level limit.
type Runner struct {
	Counted
}

// Front counts every call with a type-level limit: its own Hello, and Get,
// which it gets from base.Service with Get's own limit.
//
//ratelimit:window=1s max=100
type Front struct {
	*base.Service
}

// Hello is Front's own method.
func (f *Front) Hello(ctx context.Context) error { return nil }
