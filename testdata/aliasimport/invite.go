// Package aliasimport uses an aliased import and a dot import in keys.
package aliasimport

import (
	"context"
	str "strings"
)

// The import is used outside the directive too, as Go requires.
var _ = str.ToLower

// Users invites users.
type Users interface {
	// Invite keys on the lower-cased address, through the aliased import.
	//
	//ratelimit:key=str.ToLower(email) window=1m max=5
	Invite(ctx context.Context, email string) error

	// Tag has a parameter named like the alias: the generated file must
	// import strings under another name.
	//
	//ratelimit:key=str window=1m max=5
	Tag(ctx context.Context, str string) error
}
