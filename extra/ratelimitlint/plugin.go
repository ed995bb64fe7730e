// Package ratelimitlint is the golangci-lint module plugin of ratelimitgen:
// it runs the analyzer of analysis/ratelimitcheck, which reports every
// error that go generate would report for the //ratelimit: directives of a
// package, at the directive, and a ratelimit_gen.go that is missing or out
// of date.
//
// golangci-lint runs module plugins in a binary built with them. Copy
// this .custom-gcl.yml beside .golangci.yml, with the golangci-lint
// version you use,
//
//	version: v2.15.0
//	plugins:
//	  - module: github.com/ratelimitgen/ratelimitgen/extra/ratelimitlint
//	    version: latest
//
// build the binary with `golangci-lint custom` (it writes
// ./custom-gcl), and enable the linter in .golangci.yml:
//
//	version: "2"
//	linters:
//	  enable:
//	    - ratelimitgen
//	  settings:
//	    custom:
//	      ratelimitgen:
//	        type: module
//	        description: //ratelimit: directives and their generated wrappers
//	        settings:
//	          output: ratelimit_gen.go   # ratelimitgen -output, if go:generate sets it
//	          warn-near-misses: false    # ratelimitgen -warn-near-misses
//
// Run it with ./custom-gcl run ./...
package ratelimitlint

import (
	"fmt"
	"strconv"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/ratelimitgen/ratelimitgen/analysis/ratelimitcheck"
)

func init() {
	register.Plugin("ratelimitgen", newPlugin)
}

// Settings are the plugin's settings in .golangci.yml, ratelimitgen's
// flags that change what go generate reports.
type Settings struct {
	// Output is the name of the generated file, as ratelimitgen -output;
	// ratelimit_gen.go if empty.
	Output string `json:"output"`
	// WarnNearMisses leaves out comments that look like misspelt
	// directives, as ratelimitgen -warn-near-misses makes them warnings.
	WarnNearMisses bool `json:"warn-near-misses"`
}

type plugin struct {
	settings Settings
}

func newPlugin(conf any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[Settings](conf)
	if err != nil {
		return nil, fmt.Errorf("ratelimitgen settings: %w", err)
	}
	return &plugin{settings: s}, nil
}

// BuildAnalyzers returns ratelimitcheck.Analyzer with the settings as its
// flags.
func (p *plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	a := ratelimitcheck.Analyzer
	if p.settings.Output != "" {
		if err := a.Flags.Set("output", p.settings.Output); err != nil {
			return nil, fmt.Errorf("ratelimitgen settings: output: %w", err)
		}
	}
	if err := a.Flags.Set("warn-near-misses", strconv.FormatBool(p.settings.WarnNearMisses)); err != nil {
		return nil, fmt.Errorf("ratelimitgen settings: warn-near-misses: %w", err)
	}
	return []*analysis.Analyzer{a}, nil
}

// GetLoadMode asks for type information: the analyzer checks the
// directives against the package's types.
func (p *plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
