// Package embedded has interfaces that embed others: a method keeps the
// limit of its own declaration in every interface that embeds it.
package embedded

import (
	"context"
	"io"
)

// Reader reads blobs.
type Reader interface {
	//ratelimit:key=id window=1s max=5
	Read(ctx context.Context, id string) ([]byte, error)
}

// ReadWriter embeds Reader, whose limit applies to Read here too, and
// io.Closer, which is forwarded.
type ReadWriter interface {
	Reader
	io.Closer

	//ratelimit:key=id window=1s max=2
	Write(ctx context.Context, id string, b []byte) error
}
