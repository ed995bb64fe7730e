// Package erroutcome has refund= and settle= directives that cannot work.
package erroutcome

import "context"

// Reply is a result.
type Reply struct {
	Text   string
	Tokens int
}

// Service has one mistake per method.
type Service interface {
	// A refund condition must be a bool.
	//
	//ratelimit:key=user window=1m max=5 refund=err
	NotBool(ctx context.Context, user string) error

	// settle= must be an integer.
	//
	//ratelimit:key=user window=1m max=5 settle=resp.Text
	NotInteger(ctx context.Context, user string) (*Reply, error)

	// The results have no name res.
	//
	//ratelimit:key=user window=1m max=5 refund=res == nil
	Unknown(ctx context.Context, user string) (*Reply, error)

	// A parameter is called resp, as the unnamed result would be.
	//
	//ratelimit:key=user window=1m max=5 settle=resp.Tokens
	Clash(ctx context.Context, user string, resp int) (*Reply, error)

	// A call settled by its outcome may wait, but for a while.
	//
	//ratelimit:key=user window=1m max=5 refund=err == nil
	//ratelimit:key=user window=1h max=50 wait=0s name=Service.Waits.hourly
	Waits(ctx context.Context, user string) error

	// Beside another limit, a cost computed per call cannot be settled.
	//
	//ratelimit:key=user window=1m max=5 cost=n settle=resp.Tokens
	//ratelimit:key=user window=1h max=50 name=Service.Computed.hourly
	Computed(ctx context.Context, user string, n int) (*Reply, error)
}

// Typed has a type-level directive.
//
//ratelimit:window=1m max=5 refund=err == nil
type Typed interface {
	Do(ctx context.Context) error
}

// Counted has a type-level limit, which a method's limit whose cost is
// computed per call and settled by its outcome cannot be beside.
//
//ratelimit:window=1m max=50 wait=1s
type Counted interface {
	//ratelimit:key=user window=1m max=10 cost=n refund=err == nil
	Do(ctx context.Context, user string, n int) error
}
