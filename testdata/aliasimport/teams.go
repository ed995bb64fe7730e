package aliasimport

import (
	"context"
	. "strings"
)

var _ = ToUpper

// Teams keys through a dot import.
type Teams interface {
	//ratelimit:key=ToUpper(name),TrimSpace(name) window=1m max=5
	Join(ctx context.Context, name string) error
}
