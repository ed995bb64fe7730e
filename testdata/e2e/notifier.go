// Package e2e is generated, built and run by the golden test: its test
// calls the wrapper on the memory limiter and on a real Redis.
package e2e

import "context"

// SendCodeRequest asks for a login code.
type SendCodeRequest struct {
	Email string
}

// Account is charged.
type Account struct {
	Tenant string
	ID     int64
}

// Notifier sends messages.
type Notifier interface {
	//ratelimit:key=req.Email window=60s max=3
	SendCode(ctx context.Context, req SendCodeRequest) error

	//ratelimit:key=id window=60s max=3
	Lookup(ctx context.Context, id int64) (string, error)

	//ratelimit:key=acct.Tenant,acct.ID window=60s max=3
	Charge(ctx context.Context, acct Account, cents int) (int, error)
}
