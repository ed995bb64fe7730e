package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/generate"
)

// TestGeneratedCodeIsUpToDate is `ratelimitgen -check ./...` in examples/,
// this module: it fails when a directive of any example changed (or the
// generator did) and its ratelimit_gen.go was not regenerated with go
// generate.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	dir, err := filepath.Abs("..")
	require.NoError(t, err)
	res, err := generate.Generate(t.Context(), generate.Config{Dir: dir}, "./...")
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "misspelt directives")
	require.Len(t, res.Files, 2, "the generated files of examples/verifycode and examples/tokenbudget")

	stale, err := generate.Stale(res.Files)
	require.NoError(t, err)
	assert.Empty(t, stale, "run: go generate ./... in examples")
}

// TestReadmeManifest: the manifest of this example in docs/operating.md
// is what `ratelimitgen -list ./...` prints in examples/.
func TestReadmeManifest(t *testing.T) {
	dir, err := filepath.Abs("..")
	require.NoError(t, err)
	man, err := generate.List(t.Context(), generate.Config{Dir: dir}, "./...")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(dir, "..", "docs", "operating.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "```\n"+string(man.Text(dir))+"```\n",
		"update the manifest in docs/operating.md with: cd examples && go tool ratelimitgen -list ./...")
}
