// Package manifest holds the JSON form of the manifest of limits that
// `ratelimitgen -list -json` writes (internal/generate) and ratelimitctl
// reads (internal/ctl), so that both spell it alike.
package manifest

import "github.com/ratelimitgen/ratelimitgen/runtime"

// Entry is one limit of the manifest, one object of the JSON array; see
// generate.Manifest.JSON for what each field holds.
type Entry struct {
	Name        string            `json:"name"`
	Window      string            `json:"window,omitempty"`
	Period      string            `json:"period,omitempty"`
	Zone        string            `json:"zone,omitempty"`
	Max         int               `json:"max,omitempty"`
	MaxExpr     string            `json:"max_expr,omitempty"`
	Concurrency int               `json:"concurrency,omitempty"`
	Lease       string            `json:"lease,omitempty"`
	Algorithm   runtime.Algorithm `json:"algorithm"`
	Burst       int               `json:"burst,omitempty"`
	Mode        runtime.Mode      `json:"mode"`
	Key         []string          `json:"key,omitempty"`
	Cost        string            `json:"cost,omitempty"`
	Wait        string            `json:"wait,omitempty"`
	Refund      string            `json:"refund,omitempty"`
	Settle      string            `json:"settle,omitempty"`
	File        string            `json:"file"`
	Line        int               `json:"line"`
}
