package embedacross

import (
	"context"

	"github.com/ratelimitgen/ratelimitgen/testmod/embedacross/base"
)

// Kiosk exists on Linux only, and embeds base.Store there.
type Kiosk interface {
	base.Store
	//ratelimit:window=1m max=2
	Wake(ctx context.Context) error
}
