package ratelimithttp_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ratelimithttp works with any runtime.Limiter, so it must not pull a
// backend (and its client library) into the programs that use it.
func TestImportsNoBackend(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "go list -deps: %s", out)
	for _, dep := range strings.Fields(string(out)) {
		require.NotContains(t, dep, "redis", "ratelimithttp must import no backend")
	}
}
