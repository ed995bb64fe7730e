package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/protoctest"
)

// plugins are the protoc plugins that write gen/, at the versions go.mod
// requires.
var plugins = []string{
	"google.golang.org/protobuf/cmd/protoc-gen-go",
	"google.golang.org/grpc/cmd/protoc-gen-go-grpc",
	"connectrpc.com/connect/cmd/protoc-gen-connect-go",
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto/cmd/protoc-gen-ratelimit",
}

// TestGeneratedCodeIsUpToDate runs protoc with the plugins, as main.go's
// doc says, and compares what they write with gen/, file by file: it
// fails when verify.proto, a plugin or protoc-gen-ratelimit changed and
// gen/ was not regenerated.
func TestGeneratedCodeIsUpToDate(t *testing.T) {
	out := t.TempDir()
	args := append(protoctest.Plugins(t, plugins...),
		"-I", "proto", "-I", "third_party",
		"--go_out="+out, "--go_opt=paths=source_relative",
		"--go-grpc_out="+out, "--go-grpc_opt=paths=source_relative",
		"--connect-go_out="+out, "--connect-go_opt=paths=source_relative",
		"--ratelimit_out="+out, "--ratelimit_opt=paths=source_relative,grpc,connect",
		"verify/v1/verify.proto")
	msg, err := protoctest.Run(t, ".", args...)
	require.NoError(t, err, msg)

	want, got := files(t, out), files(t, "gen")
	assert.Len(t, want, 5, "verify.pb.go, verify_grpc.pb.go, verify.connect.go and a wrapper of each interface")
	for name, text := range want {
		assert.Equal(t, text, got[name], "gen/%s is stale: regenerate gen/ as main.go says", name)
	}
	for name := range got {
		assert.Contains(t, want, name, "gen/%s is generated no more: remove it", name)
	}
}

// TestBufGenerateClean runs buf generate with buf.gen.yaml, whose clean:
// true empties the output directory first: the wrappers are written again
// with the rest, and gen/ is what protoc writes but for the version of
// protoc that the headers name, which buf does not tell its plugins.
func TestBufGenerateClean(t *testing.T) {
	buf := protoctest.Buf(t)
	path := protoctest.PluginDir(t, plugins...) + string(os.PathListSeparator) + os.Getenv("PATH")
	out := t.TempDir()
	stale := filepath.Join(out, "gen", "verify", "v1", "old_ratelimit_grpc.pb.go")
	require.NoError(t, os.MkdirAll(filepath.Dir(stale), 0o755))
	require.NoError(t, os.WriteFile(stale, []byte("package verifyv1\n"), 0o644))

	cmd := exec.Command(buf, "generate", "--output", out)
	cmd.Env = append(os.Environ(), "PATH="+path)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)

	assert.NoFileExists(t, stale, "clean: true left a file in gen/")
	want, got := files(t, filepath.Join(out, "gen")), files(t, "gen")
	assert.Len(t, want, 5)
	protocVersion := regexp.MustCompile(`(?m)^// (\t|- )protoc +\S+( .*)?$`)
	for name, text := range want {
		assert.Equal(t, protocVersion.ReplaceAllString(got[name], ""), protocVersion.ReplaceAllString(text, ""), "buf generate writes gen/%s otherwise", name)
	}
	assert.Contains(t, want, "verify/v1/verify_ratelimit_grpc.pb.go")
	assert.Contains(t, want, "verify/v1/verifyv1connect/verify_ratelimit.connect.go")
}

// files returns the text of every file under dir, by its path in dir.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	texts := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		texts[filepath.ToSlash(rel)] = string(b)
		return err
	})
	require.NoError(t, err)
	return texts
}
