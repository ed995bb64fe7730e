// Package scoping shows that the generator chooses the names of a
// method's identifiers for that method alone, as a person writing it
// would: a parameter of one method renames nothing in another.
package scoping

import "context"

// Accounts has parameters named like the identifiers of other methods'
// bodies.
type Accounts interface {
	// Admin has a parameter b, the name of the buffer of a composite key:
	// Admin's buffer is renamed, Invite's is not.
	//
	//ratelimit:key=tenant,b window=1m max=3
	Admin(ctx context.Context, tenant string, b int) error

	//ratelimit:key=tenant,email window=1m max=3
	Invite(ctx context.Context, tenant, email string) error

	// Rename has a parameter r: its receiver is renamed, no other
	// method's.
	//
	//ratelimit:key=r window=1m max=3
	Rename(ctx context.Context, r string) error

	// Move has parameters named like the cost and error locals.
	//
	//ratelimit:key=to cost=len(err) window=1m max=10
	Move(ctx context.Context, to string, err []string) error

	//ratelimit:key=to cost=len(items) window=1m max=10
	Copy(ctx context.Context, to string, items []string) error

	// Quota has parameters named like the copies of limits whose max each
	// call computes: Quota's copies are renamed, Plan's are not.
	//
	//ratelimit:key=tenant window=1m max=limit
	//ratelimit:key=tenant window=1h max=dailyLimit name=Accounts.Quota.daily
	Quota(ctx context.Context, tenant string, limit, dailyLimit int) error

	//ratelimit:key=tenant window=1m max=n
	//ratelimit:key=tenant window=1h max=n*10 name=Accounts.Plan.daily
	Plan(ctx context.Context, tenant string, n int) error
}
