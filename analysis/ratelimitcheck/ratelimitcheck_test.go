package ratelimitcheck_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/ratelimitgen/ratelimitgen/analysis/ratelimitcheck"
)

// TestAnalyzer runs the analyzer on the packages of testdata, each with
// the diagnostics it must report in // want comments: errors of the
// generator, a stale, a missing and a leftover generated file, a wrapper
// missing in a package that gets a limited method from another package by
// embedding, and nothing for a package whose file is up to date.
func TestAnalyzer(t *testing.T) {
	// analysistest works in the module whose root it is given.
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	results := analysistest.Run(t, repo, ratelimitcheck.Analyzer,
		"./analysis/ratelimitcheck/testdata/directives",
		"./analysis/ratelimitcheck/testdata/clean",
		"./analysis/ratelimitcheck/testdata/stale",
		"./analysis/ratelimitcheck/testdata/missing",
		"./analysis/ratelimitcheck/testdata/removed",
		"./analysis/ratelimitcheck/testdata/embedded/...",
	)
	if len(results) != 7 {
		t.Errorf("the analyzer ran on %d packages; want 7", len(results))
	}
}
