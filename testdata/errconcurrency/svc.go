// Package errconcurrency has concurrency= directives with problems.
package errconcurrency

import "context"

// Request is a tenant's request.
type Request struct {
	TenantID string
	Items    []string
}

// Svc has one problem per method.
type Svc interface {
	//ratelimit:key=req.TenantID concurrency=0
	Zero(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=req.N
	NotConstant(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=2 window=1m max=3
	Window(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=2 refund=err == nil
	Refund(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=2 lease=100ms
	ShortLease(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID window=1m max=3 lease=30s
	LeaseAlone(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID window=1m max=100 cost=len(req.Items)
	//ratelimit:key=req.TenantID concurrency=2 name=Svc.ComputedCost.inflight
	ComputedCost(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID window=1m max=100
	//ratelimit:key=req.TenantID concurrency=2 wait=1d name=Svc.Wait.inflight
	Wait(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=2 name=Svc.Twice.inflight
	//ratelimit:concurrency=10 name=Svc.Twice.inflight
	Twice(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=2 name=Svc.shared
	SharedTwo(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=3 name=Svc.shared
	SharedThree(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID window=1m max=3 name=Svc.shared.rate
	RateShared(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=3 name=Svc.shared.rate
	PermitShared(ctx context.Context, req Request) error

	//ratelimit:key=req concurrency=2
	BadKey(ctx context.Context, req Request) error

	//ratelimit:key=req.TenantID concurrency=2
	NoError(ctx context.Context, req Request)
}

// Typed has a type-level concurrency limit.
//
//ratelimit:concurrency=5
type Typed interface {
	Get(ctx context.Context) error
}
