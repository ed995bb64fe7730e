package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// installModule is a new module that installs the generator the way the
// README says: go get -tool, with a replace of this module by the
// checkout. It returns the module's directory and the go command's
// environment.
//
// The module is not published under its path, and the public proxy refuses
// (403) rather than denies (404) paths under it, which go get asks about
// to rule out a module named like the package: an empty file proxy
// after the user's answers "not found" for those. go get names the
// replaced version (v0.0.0) instead of asking for the latest, and
// everything else (the dependencies' test dependencies that go mod tidy
// records) comes from the module cache or the proxy. The checksum database
// is not consulted for this throwaway module; a copy of this module's
// go.sum pins what it shares.
func installModule(t *testing.T) (string, []string) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOSUMDB=off", "GOPROXY="+testProxy(t))
	goIn(t, dir, env, "mod", "init", "example.com/notify")
	goIn(t, dir, env, "mod", "edit", "-replace", modulePath+"="+repo, "-require", modulePath+"@v0.0.0")
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	goIn(t, dir, env, "get", "-tool", modulePath+"/cmd/ratelimitgen@v0.0.0")
	return dir, env
}

// testProxy returns GOPROXY for the install tests: the first proxy of the
// user's GOPROXY, then, on any error from it, an empty file proxy.
func testProxy(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		t.Fatalf("go env GOPROXY: %v", err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), ",")
	first, _, _ = strings.Cut(first, "|")
	empty := "file://" + filepath.ToSlash(t.TempDir())
	if first == "off" || first == "direct" || first == "" {
		return empty
	}
	return first + "|" + empty
}

// A module that installs the generator with go get -tool generates,
// survives go mod tidy (which keeps the tool and its dependencies), builds
// and vets, and the tool reports the version it was built from.
func TestInstallAsTool(t *testing.T) {
	dir, env := installModule(t)
	if err := os.MkdirAll(filepath.Join(dir, "notify"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "notify", "notify.go"), `package notify

//go:generate go tool ratelimitgen

import "context"

// Notifier sends login codes.
type Notifier interface {
	//ratelimit:key=email window=60s max=3
	SendCode(ctx context.Context, email string) error
}
`)
	goIn(t, dir, env, "generate", "./...")
	goIn(t, dir, env, "mod", "tidy")
	goIn(t, dir, env, "build", "./...")
	goIn(t, dir, env, "vet", "./...")
	// tidy ran after generate: a second generate must still find the tool.
	goIn(t, dir, env, "generate", "./...")
	if out := goIn(t, dir, env, "tool", "ratelimitgen", "-version"); !strings.HasPrefix(out, "ratelimitgen v0.0.0 => ") {
		t.Errorf("go tool ratelimitgen -version printed %q; want the required version and its replacement", out)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "tool "+modulePath+"/cmd/ratelimitgen") {
		t.Errorf("go.mod lost the tool line:\n%s", mod)
	}
}

// ratelimitvet installs beside the generator with go get -tool, and the
// command of docs/lint.md, go vet -vettool=$(go tool -n ratelimitvet),
// passes on the generated module and fails, naming the file, once a
// directive changes without go generate.
func TestInstallVetTool(t *testing.T) {
	dir, env := installModule(t)
	if err := os.MkdirAll(filepath.Join(dir, "notify"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package notify

//go:generate go tool ratelimitgen

import "context"

// Notifier sends login codes.
type Notifier interface {
	//ratelimit:key=email window=60s max=3
	SendCode(ctx context.Context, email string) error
}
`
	write(t, filepath.Join(dir, "notify", "notify.go"), src)
	goIn(t, dir, env, "generate", "./...")
	goIn(t, dir, env, "get", "-tool", modulePath+"/cmd/ratelimitvet@v0.0.0")
	vettool := strings.TrimSpace(goIn(t, dir, env, "tool", "-n", "ratelimitvet"))
	goIn(t, dir, env, "vet", "-vettool="+vettool, "./...")

	write(t, filepath.Join(dir, "notify", "notify.go"), strings.Replace(src, "max=3", "max=4", 1))
	cmd := exec.Command("go", "vet", "-vettool="+vettool, "./...")
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if want := "notify/notify.go:9:2: ratelimit_gen.go is out of date: run go generate to update it"; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("go vet after the directive changed: %v\n%s\nwant a failure with %q", err, out, want)
	}
}

// goIn runs the go command in dir and fails the test with its output if
// it fails.
func goIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
