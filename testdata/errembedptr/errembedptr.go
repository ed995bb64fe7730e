// Package errembedptr embeds a pointer to an interface, which Go forbids:
// the generator reports the compiler's error at the field rather than
// generating a wrapper without Read's limit.
package errembedptr

import (
	"context"

	"github.com/ratelimitgen/ratelimitgen/testmod/errembedptr/base"
)

// Shop embeds *base.Store.
type Shop struct{ *base.Store }

// Buy is Shop's own limited method.
//
//ratelimit:key=sku window=1m max=2
func (s *Shop) Buy(ctx context.Context, sku string) error { return nil }
