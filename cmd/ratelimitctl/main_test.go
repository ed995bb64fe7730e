package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// TestBinary builds the command and runs it as an operator would, against
// a real redis-server whose ACL user the service and the command share,
// the password in the environment.
func TestBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "ratelimitctl")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	limits, err := filepath.Abs(filepath.Join("..", "..", "internal", "ctl", "testdata", "limits.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.StartServer(t)
	service := redislimit.New(srv.Client(t))
	l := runtime.Limit{Name: "example.com/notify.Notifier.SendCode", Window: time.Minute, Max: 3}
	for range 3 {
		if err := runtime.Enforce(context.Background(), service, runtime.Request{Limit: l, Key: "alice@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	ctl := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "RATELIMITCTL_REDIS_PASSWORD=")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("$ ratelimitctl %s\n%s%s(exit %d)", strings.Join(args, " "), out.String(), errOut.String(), code)
		return out.String(), errOut.String(), code
	}
	args := []string{"-manifest", limits, "-limit", "Notifier.SendCode", "-key", "alice@example.com", "-redis", srv.URL()}

	out, _, code := ctl("", "list", "-manifest", limits)
	if code != 0 || !regexp.MustCompile(`(?m)^example\.com/notify\.Notifier\.SendCode +sliding-log +3 +1m0s +enforce `).MatchString(out) {
		t.Errorf("list: exit %d, output\n%s", code, out)
	}
	out, _, code = ctl("", append([]string{"show"}, args...)...)
	if code != 0 || !strings.Contains(out, "remaining  0 of 3") {
		t.Errorf("show: exit %d, output\n%s", code, out)
	}
	_, errOut, code := ctl("y\n", append([]string{"reset"}, args...)...)
	if code != 2 || !strings.Contains(errOut, "refusing to reset without -yes") {
		t.Errorf("reset from a pipe: exit %d, stderr\n%s", code, errOut)
	}
	// /dev/null is a character device, but no terminal to confirm on.
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	cmd := exec.Command(bin, append([]string{"reset"}, args...)...)
	cmd.Stdin = devNull
	if out, err := cmd.CombinedOutput(); cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "refusing to reset without -yes") {
		t.Errorf("reset from %s: %v\n%s", os.DevNull, err, out)
	}
	out, _, code = ctl("", append([]string{"reset", "-yes"}, args...)...)
	if code != 0 || !strings.Contains(out, "0 of 3 remaining before, 3 now") {
		t.Errorf("reset -yes: exit %d, output\n%s", code, out)
	}
	if err := runtime.Enforce(context.Background(), service, runtime.Request{Limit: l, Key: "alice@example.com"}); err != nil {
		t.Errorf("after the reset, the service still denies: %v", err)
	}
	_, errOut, code = ctl("", "show", "-manifest", limits, "-limit", "Notifier.SendCod", "-key", "alice@example.com", "-redis", srv.URL())
	if code != 2 || !strings.Contains(errOut, `did you mean "example.com/notify.Notifier.SendCode"`) {
		t.Errorf("misspelt limit: exit %d, stderr\n%s", code, errOut)
	}
}
