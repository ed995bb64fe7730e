package ratelimitgenv1_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/protoctest"
)

// TestGeneratedCodeIsUpToDate regenerates limit.pb.go with protoc and the
// protoc-gen-go of this module's google.golang.org/protobuf, as doc.go
// says, and compares it with the committed file.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	plugins := protoctest.Plugins(t, "google.golang.org/protobuf/cmd/protoc-gen-go")
	out := t.TempDir()
	args := append(plugins, "-I", "../proto", "--go_out="+out, "--go_opt=paths=source_relative", "ratelimitgen/v1/limit.proto")
	msg, err := protoctest.Run(t, ".", args...)
	require.NoError(t, err, msg)
	want, err := os.ReadFile(filepath.Join(out, "ratelimitgen", "v1", "limit.pb.go"))
	require.NoError(t, err)
	got, err := os.ReadFile("limit.pb.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "limit.pb.go is stale: regenerate it as doc.go says")
}
