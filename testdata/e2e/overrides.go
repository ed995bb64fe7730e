package e2e

import "context"

// exportCost is what one export costs, a constant: an override of the
// limit must leave room for it.
const exportCost = 4

// Exports runs exports, at a constant cost each.
type Exports interface {
	//ratelimit:key=tenant cost=exportCost window=1m max=12 algo=token-bucket
	Run(ctx context.Context, tenant string) error
}
