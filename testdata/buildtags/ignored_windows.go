package buildtags

import "context"

// Service exists on Windows only: a run on Linux warns that its
// directive is left for a run on Windows.
type Service interface {
	//ratelimit:window=1m max=5
	Start(ctx context.Context) error
}
