// Package namedresults has methods with named results, of kinds whose zero
// values are spelt differently.
package namedresults

import (
	"context"
	"time"
	"unsafe"
)

// Entry is a struct result.
type Entry struct {
	Name string
}

// Level is a named integer.
type Level int

// Directory looks things up.
type Directory interface {
	//ratelimit:key=id window=1m max=30
	Lookup(ctx context.Context, id int64) (name string, found bool, level Level, err error)

	//ratelimit:key=id window=1m max=30
	Entries(ctx context.Context, id int64) (e Entry, list []Entry, byName map[string]*Entry, arr [2]Entry, f func() error, p unsafe.Pointer, c chan<- int, any interface{ Close() error }, d time.Duration, err error)
}
