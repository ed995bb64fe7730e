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

// bigLog is a constant max beyond a sliding log's bound.
const bigLog = 5_000_000

// Logs are sliding logs (the default algorithm) beyond the largest max a
// sliding log takes, which bounds a key's memory.
type Logs interface {
	//ratelimit:window=1h max=10_000_000
	Huge(ctx context.Context) error

	//ratelimit:window=1h max=1000001 algo=sliding-log
	JustOver(ctx context.Context) error

	//ratelimit:window=1h max=bigLog
	Named(ctx context.Context) error

	// With a max computed per call, a constant cost is still bounded.
	//
	//ratelimit:window=1h max=q.Max cost=1000001
	Pour(ctx context.Context, q Quota) error

	// At the bound: a warning about Redis memory, no error.
	//
	//ratelimit:window=1h max=1000000
	AtBound(ctx context.Context) error
}

// Windows are too long for their algorithm to count exactly.
type Windows interface {
	// 148 years: beyond every algorithm's bound.
	//
	//ratelimit:window=1300000h max=10 algo=fixed-window
	Fixed(ctx context.Context) error

	// 137 years: within a fixed window's bound, beyond a sliding window's.
	//
	//ratelimit:window=1200000h max=10 algo=sliding-window
	Sliding(ctx context.Context) error

	// 100 years at 1000 per window: GCRA adds up to twice its tolerance
	// (the window) to an arrival time.
	//
	//ratelimit:window=876000h max=1000 algo=gcra
	Meter(ctx context.Context) error
}
