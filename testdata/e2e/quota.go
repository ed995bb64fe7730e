package e2e

import "context"

// Exporter exports tenants' data, under a daily quota.
type Exporter interface {
	// Export is 2 per day per tenant, the day being Berlin's: the quota
	// comes back at midnight there.
	//
	//ratelimit:key=tenant window=1d tz=Europe/Berlin max=2
	Export(ctx context.Context, tenant string) error
}
