package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/generate"
)

// TestGeneratedCodeIsUpToDate is `ratelimitgen -check ./...` in this
// example: it fails when llm/ratelimit_gen.go was not regenerated with go
// generate after a directive (or the generator) changed.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	res, err := generate.Generate(t.Context(), generate.Config{Dir: dir}, "./...")
	require.NoError(t, err)
	require.NotEmpty(t, res.Files, "no directives found under examples/tokenbudget")
	stale, err := generate.Stale(res.Files)
	require.NoError(t, err)
	assert.Empty(t, stale, "run: go generate ./... in examples/tokenbudget")
}
