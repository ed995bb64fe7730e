// Package nameoverride gives limits their own names with name=.
package nameoverride

import "context"

// Login logs users in.
type Login interface {
	//ratelimit:key=email name=login.password window=15m max=5
	Password(ctx context.Context, email, password string) error

	//ratelimit:key=email name=login.password window=15m max=5
	Code(ctx context.Context, email, code string) error
}
