// Package errmax has max= expressions the generator refuses.
package errmax

import "context"

// Plan is a subscription.
type Plan struct {
	Name string
	Rate float64
}

func planName(ctx context.Context) string { return "" }

// none is no calls at all.
const none = 0

// Tiers has bad max expressions.
type Tiers interface {
	// A string is not a count.
	//
	//ratelimit:window=1m max=planName(ctx)
	Name(ctx context.Context) error

	// Nor is a float.
	//
	//ratelimit:window=1m max=p.Rate
	Rate(ctx context.Context, p Plan) error

	// A constant must be at least 1.
	//
	//ratelimit:window=1m max=none
	Zero(ctx context.Context) error

	// An undefined name, with a suggestion.
	//
	//ratelimit:window=1m max=plna.Rate
	Typo(ctx context.Context, plan Plan) error
}

// Quota is a tenant's allowance.
type Quota struct{ Max int }

// Bucket's constant cost is checked against its burst, which is known;
// against a max computed per call it could not be.
type Bucket interface {
	//ratelimit:window=1m max=q.Max algo=token-bucket burst=5 cost=6
	Fill(ctx context.Context, q Quota) error

	//ratelimit:window=1m max=q.Max cost=6
	Pour(ctx context.Context, q Quota) error

	// A constant max is checked as a literal is.
	//
	//ratelimit:window=1m max=small cost=6
	Drip(ctx context.Context) error
}

// small is a constant max.
const small = 5
