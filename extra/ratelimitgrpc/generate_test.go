package ratelimitgrpc_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/generate"
)

// TestGeneratedCodeIsUpToDate is `ratelimitgen -check ./...` in this
// module: it fails when a directive in verify.proto (after protoc) or
// limits.go changed, or the generator did, and
// internal/verifypb/ratelimit_gen.go was not regenerated with
// go generate ./...
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	res, err := generate.Generate(t.Context(), generate.Config{Dir: dir}, "./...")
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "misspelt directives")
	require.NotEmpty(t, res.Files, "no directives found under extra/ratelimitgrpc")

	stale, err := generate.Stale(res.Files)
	require.NoError(t, err)
	assert.Empty(t, stale, "run: go generate ./... in extra/ratelimitgrpc")
}

// TestProtoDirectivesReachTheGeneratedInterfaces: the directive of
// verify.proto, copied by protoc-gen-go-grpc into both generated
// interfaces, declares the same limit twice, and the limits of limits.go
// are there too.
func TestProtoDirectivesReachTheGeneratedInterfaces(t *testing.T) {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	man, err := generate.List(t.Context(), generate.Config{Dir: dir}, "./...")
	require.NoError(t, err)
	text := string(man.Text(dir))
	assert.Contains(t, text, "Verifier.SendCode.all")
	assert.Contains(t, text, "internal/verifypb/verify_grpc.pb.go:")
	assert.Contains(t, text, "internal/verifypb/limits.go:")
}
