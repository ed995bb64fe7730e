// Package orders declares a Service whose method has the same Type.Method
// as invoices.Service's: their default limit names must differ, so that one
// limiter counts them apart.
package orders

import "context"

// Service looks orders up.
type Service interface {
	//ratelimit:key=id window=1m max=2
	Get(ctx context.Context, id string) error
}
