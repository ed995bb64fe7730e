package runtime

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRuntimeImportsOnlyTheStandardLibrary keeps go-redis and every other
// module out of programs that use only the vocabulary and the memory
// limiter (package memlimit), generated wrappers included.
func TestRuntimeImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".", "./memlimit").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/ratelimitgen/ratelimitgen/runtime") || strings.Contains(p, "redislimit") {
			t.Errorf("runtime or memlimit depends on %s; they may use the standard library only", p)
		}
	}
}
