package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/protoctest"
)

// TestEveryKindBuilds generates testdata/kinds/v1/kinds.proto, whose
// limits take every kind of key and cost on every kind of rpc, with each
// parameter that changes the code (connect-go's simple signatures and its
// handler in the package of the messages, protoc-gen-go-grpc without
// mustEmbedUnimplementedXxxServer), and builds and vets the result in a
// copy of this module.
func TestEveryKindBuilds(t *testing.T) {
	flags := protoctest.Plugins(t, plugins...)
	module := "github.com/ratelimitgen/ratelimitgen/examples/verifyrpc"
	out := t.TempDir()
	// Each variant maps a plugin's name to its parameters; a plugin not
	// named does not run. connect-go's handler cannot join protoc-gen-go-
	// grpc's server in the messages' package: both declare XxxClient.
	variants := map[string]map[string]string{
		"kinds":    {"go-grpc": "", "connect-go": "", "ratelimit": "grpc,connect"},
		"simple":   {"connect-go": "simple,package_suffix=", "ratelimit": "connect,simple,package_suffix="},
		"nounimpl": {"go-grpc": "require_unimplemented_servers=false", "ratelimit": "grpc"},
	}
	var pkgs []string
	for dir, params := range variants {
		pkg := module + "/internal/" + dir + "/v1"
		pkgs = append(pkgs, pkg+"/...")
		m := "Mkinds/v1/kinds.proto=" + pkg + ";kindsv1,module=" + module
		args := append(flags, "-I", "testdata", "-I", "third_party", "--go_out="+out, "--go_opt="+m)
		for plugin, p := range params {
			args = append(args, "--"+plugin+"_out="+out, "--"+plugin+"_opt="+join(m, p))
		}
		msg, err := protoctest.Run(t, ".", append(args, "kinds/v1/kinds.proto")...)
		require.NoError(t, err, msg)
	}

	// out is a copy of this module, with its requirements and sums, whose
	// replace directives name the same directories.
	here, err := os.Getwd()
	require.NoError(t, err)
	mod, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	mod = regexp.MustCompile(`=> (\.\.\S*)`).ReplaceAllFunc(mod, func(m []byte) []byte {
		return []byte("=> " + filepath.Join(here, string(m[len("=> "):])))
	})
	require.NoError(t, os.WriteFile(filepath.Join(out, "go.mod"), mod, 0o644))
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "go.sum"), sum, 0o644))

	cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	cmd.Dir = out
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "go vet of the generated code:\n%s", msg)
	listed, err := exec.Command("go", "-C", out, "list", "./...").Output()
	require.NoError(t, err)
	require.Len(t, strings.Fields(string(listed)), 4, "the packages of kinds (two), simple and nounimpl:\n%s", listed)
}

// join joins two plugin parameter lists.
func join(a, b string) string {
	return strings.Trim(a+","+b, ",")
}
