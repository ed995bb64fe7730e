// Package mid embeds base's limited types, for package embedacross to
// get their methods through two levels of embedding.
package mid

import "github.com/ratelimitgen/ratelimitgen/testmod/embedacross/base"

// Keeper embeds *base.Auditor.
type Keeper struct {
	*base.Auditor
}

// Reader embeds base.Store.
type Reader interface {
	base.Store
}
