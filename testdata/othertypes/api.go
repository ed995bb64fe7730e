// Package othertypes uses types and functions of other packages in
// signatures and keys.
package othertypes

import (
	"context"
	"io"
	"math/rand/v2"
	"time"

	"github.com/ratelimitgen/ratelimitgen/testmod/othertypes/apimodel"
)

// API calls a remote service.
type API interface {
	//ratelimit:key=req.User.ID window=1m max=5
	Call(ctx context.Context, req *model.Request) (*model.Response, error)

	//ratelimit:key=model.Normalize(owner.Email),at.Weekday() window=1m max=5
	Upload(ctx context.Context, owner model.User, r io.Reader, at time.Time, rng *rand.Rand) (map[string]model.User, error)

	// Watch is forwarded.
	Watch(ctx context.Context, since time.Duration) (<-chan model.Response, func(), error)
}
