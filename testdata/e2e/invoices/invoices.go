// Package invoices declares a Service whose method has the same Type.Method
// as orders.Service's: their default limit names must differ, so that one
// limiter counts them apart.
package invoices

import "context"

// Service looks invoices up.
type Service interface {
	//ratelimit:key=id window=1m max=2
	Get(ctx context.Context, id string) error
}
