package anyimport

import (
	"context"
	"html/template"

	"github.com/ratelimitgen/ratelimitgen/testmod/anyimport/tenant"
)

// Render shows a query to a tenant.
func Render(ctx context.Context, q string) string {
	return tenant.From(ctx) + ": " + template.HTMLEscapeString(q)
}
