package ratelimitgrpc_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/generate"
)

// TestGeneratedCodeIsUpToDate is `ratelimitgen -check ./...` in this
// module: it fails when a directive in verify.proto changed (after
// protoc), or the generator did, and
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

// TestProtoDirectivesReachTheGeneratedInterfaces: the directives of
// verify.proto, copied by protoc-gen-go-grpc into both generated
// interfaces, declare the same limits on each, keyed by the request,
// which the server interface leaves unnamed.
func TestProtoDirectivesReachTheGeneratedInterfaces(t *testing.T) {
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	man, err := generate.List(t.Context(), generate.Config{Dir: dir}, "./...")
	require.NoError(t, err)
	text := string(man.Text(dir))
	var keyed []generate.Entry
	for _, e := range man.Entries {
		require.Equal(t, "verify_grpc.pb.go", filepath.Base(e.Pos.Filename), "every limit comes from verify.proto")
		if len(e.Key) == 1 && e.Key[0] == "in.GetEmail()" {
			keyed = append(keyed, e)
		}
	}
	assert.Len(t, man.Entries, 6, "SendCode's two limits and WatchCodes', on the server and the client:\n%s", text)
	assert.Len(t, keyed, 4, "SendCode and WatchCodes keyed by the request, on both interfaces:\n%s", text)
}
