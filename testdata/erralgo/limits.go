// Package erralgo has directives whose algorithm, burst, cost or names are
// wrong.
package erralgo

import "context"

// Req is a request.
type Req struct {
	Email string
	Items []string
	Ratio float64
}

// Bad has one mistake per method.
type Bad interface {
	//ratelimit:key=r.Email window=1m max=3 algo=tokenbucket
	UnknownAlgo(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 burst=10
	BurstWithoutBucket(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 algo=sliding-window burst=10
	BurstOnWindow(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 algo=gcra burst=0
	ZeroBurst(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 cost=r.Email
	StringCost(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 cost=r.Ratio
	FloatCost(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 cost=len(r.Itms)
	UndefinedCost(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 cost=0
	ZeroCost(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 cost=5
	CostOverMax(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=30 algo=gcra burst=4 cost=5
	CostOverBurst(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=87600h max=1000 algo=token-bucket
	BucketTooFine(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=2000000h max=3 algo=sliding-window
	WindowTooLong(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3
	//ratelimit:key=r.Email window=24h max=10
	SecondWithoutName(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3 name=per-email
	//ratelimit:key=r.Email window=1h max=10 name=per-email
	DuplicateNames(ctx context.Context, r Req) error

	//ratelimit:key=r.Email window=1m max=3
	//ratelimit:key=r.Email window=1h max=10 name=github.com/ratelimitgen/ratelimitgen/testmod/erralgo.Bad.DefaultTaken
	DefaultTaken(ctx context.Context, r Req) error
}

// Generic has a cost whose type parameter admits non-integers.
type Generic[N ~int | ~float64] interface {
	//ratelimit:window=1m max=3 cost=n
	Cost(ctx context.Context, n N) error
}
