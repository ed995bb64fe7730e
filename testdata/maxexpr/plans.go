// Package maxexpr computes each call's max from an expression: the
// tenant's plan decides how many calls it gets.
package maxexpr

import "context"

type tenantKey struct{}

// TenantOf returns the tenant of ctx.
func TenantOf(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey{}).(string)
	return s
}

// planLimit is the calls per minute of the tenant's plan, an int.
func planLimit(ctx context.Context) int {
	if TenantOf(ctx) == "enterprise" {
		return 1000
	}
	return 10
}

// quota is the tenant's calls per second across every method of Store.
func quota(ctx context.Context) uint32 { return 50 }

// Plan is a tenant's subscription.
type Plan struct {
	Name string
	Max  int64
}

// Request carries its plan.
type Request struct {
	Tenant string
	Plan   Plan
	Items  []string
}

// defaultMax is a constant, a max like any other expression.
const defaultMax = 20

// Tenants is limited per tenant by its plan.
type Tenants interface {
	// Query's max is an int: no conversion.
	//
	//ratelimit:key=TenantOf(ctx) window=1m max=planLimit(ctx)
	Query(ctx context.Context, q string) error

	// Search's max is an int64 field, converted.
	//
	//ratelimit:key=req.Tenant window=1m max=req.Plan.Max
	Search(ctx context.Context, req Request) error

	// Batch has a computed cost and a computed max; a call that costs
	// nothing asks for neither.
	//
	//ratelimit:key=req.Tenant cost=len(req.Items) window=1m max=req.Plan.Max algo=token-bucket
	Batch(ctx context.Context, req Request) error

	// Export has two limits whose max is computed and a fixed one; its
	// parameter named limit renames the local copies.
	//
	//ratelimit:key=req.Tenant window=1m max=planLimit(ctx)
	//ratelimit:key=req.Tenant window=1h max=req.Plan.Max*10 name=Tenants.Export.hourly algo=sliding-window
	//ratelimit:window=1s max=100 name=Tenants.Export.global
	Export(ctx context.Context, req Request, limit int) error

	// Import mixes a computed cost, a computed max and a fixed limit.
	//
	//ratelimit:key=req.Tenant cost=len(req.Items) window=1m max=req.Plan.Max algo=gcra burst=100
	//ratelimit:window=1s max=100 name=Tenants.Import.global
	Import(ctx context.Context, req Request) error

	// Default's max is a constant expression; it waits for room.
	//
	//ratelimit:key=TenantOf(ctx) window=1m max=defaultMax mode=shadow wait=2s
	Default(ctx context.Context) error
}

// Store counts every method's calls against the tenant's quota, a uint32.
//
//ratelimit:key=TenantOf(ctx) window=1s max=quota(ctx) algo=gcra
type Store struct{}

// Get is counted by the quota.
func (s *Store) Get(ctx context.Context, id string) ([]byte, error) { return nil, nil }

// Put is counted by the quota.
func (s *Store) Put(ctx context.Context, id string, b []byte) error { return nil }

// Queue is generic: its max is a type parameter.
type Queue[N ~int32 | ~uint16] interface {
	//ratelimit:window=1s max=n
	Push(ctx context.Context, n N) error
}

// units is a typed constant.
const units uint16 = 40

// Shared is limited by constants, which are known at generate time: its
// type-level limit and Get's are declared with their Max.
//
//ratelimit:window=1s max=defaultMax*2 algo=sliding-window
type Shared interface {
	//ratelimit:key=id window=1m max=units
	Get(ctx context.Context, id string) error
	List(ctx context.Context) error
}
