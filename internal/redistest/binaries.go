package redistest

import (
	"os/exec"
	"testing"
)

// installHint tells a person how to get the binaries this package runs. Both
// packages named here ship redis-cli alongside redis-server.
const installHint = "these tests need a real Redis. Install it with: " +
	"sudo apt-get install -y redis-server (Debian/Ubuntu) or brew install redis (macOS)"

// lookBinary returns the path of a Redis executable, failing t with install
// instructions when it is missing: a test that silently skipped Redis would
// report success for code it never ran.
func lookBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found in PATH: %s", name, installHint)
	}
	return path
}
