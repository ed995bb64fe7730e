package e2e

import "context"

// Renderer renders tenants' documents, a few at a time.
type Renderer interface {
	// Render holds one of a tenant's 2 permits while it runs, and counts
	// against 100 renders a minute, of which a failed one gives its unit
	// back.
	//
	//ratelimit:key=tenant concurrency=2 lease=1s
	//ratelimit:key=tenant window=1m max=100 name=Renderer.Render.rate refund=err != nil
	Render(ctx context.Context, tenant string) (pages int, err error)
}

// Printer prints tenants' documents, one at a time: a call waits for the
// tenant's permit rather than be denied.
type Printer interface {
	// Print holds the tenant's one permit while it runs, and waits up to
	// 10s for it, in its turn.
	//
	//ratelimit:key=tenant concurrency=1 wait=10s
	Print(ctx context.Context, tenant string) error
}
