// Package anyimport uses packages in keys and costs that the file does not
// import: strings from the standard library, html/template (the package's
// other file imports it, which settles which "template" is meant) and
// tenant (imported by the other file only).
package anyimport

import "context"

// Request is a search.
type Request struct {
	Email string
	Query string
}

// API answers searches.
type API interface {
	//ratelimit:key=strings.ToLower(req.Email) cost=len(strings.Fields(req.Query)) window=1m max=100
	Search(ctx context.Context, req Request) error

	//ratelimit:key=tenant.From(ctx),template.HTMLEscapeString(req.Query) window=1m max=10
	Suggest(ctx context.Context, req Request) error
}
