package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/generate"
)

// TestGeneratedCodeIsUpToDate is `ratelimitgen -check ./examples/...`: it
// fails when a directive changed (or the generator did) and
// notify/ratelimit_gen.go was not regenerated with go generate.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	res, err := generate.Generate(t.Context(), generate.Config{Dir: root}, "./examples/...")
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "misspelt directives")
	require.NotEmpty(t, res.Files, "no directives found under examples/")

	stale, err := generate.Stale(res.Files)
	require.NoError(t, err)
	assert.Empty(t, stale, "run: go generate ./examples/...")
}
