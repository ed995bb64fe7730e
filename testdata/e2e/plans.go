package e2e

import "context"

// planLimits holds the calls per minute of each tenant's plan. A tenant
// without a plan has none, a Max the limiter refuses with an error.
var planLimits = map[string]int{"free": 2, "pro": 5}

// PlanLimit returns the calls per minute of the plan of ctx's tenant.
func PlanLimit(ctx context.Context) int { return planLimits[TenantOf(ctx)] }

// Quota is a tenant's allowance, as a billing system sends it.
type Quota struct {
	Tenant string
	Max    int64
}

// Reports is limited per tenant by the tenant's plan: each call computes
// its limit's Max.
type Reports interface {
	//ratelimit:key=TenantOf(ctx) window=1m max=PlanLimit(ctx)
	Run(ctx context.Context, name string) error

	// Export's max is an int64, in a shadow limit.
	//
	//ratelimit:key=q.Tenant window=1m max=q.Max mode=shadow
	Export(ctx context.Context, q Quota) error
}
