package errtestfile

import "context"

// Fake exists only in tests.
type Fake interface {
	//ratelimit:window=1m max=5
	Do(ctx context.Context) error
}
