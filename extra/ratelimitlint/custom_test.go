package ratelimitlint_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	pluginModule = "github.com/ratelimitgen/ratelimitgen/extra/ratelimitlint"
	rootModule   = "github.com/ratelimitgen/ratelimitgen"
	golangciLint = "github.com/golangci/golangci-lint/v2"
)

// TestCustomGolangciLint builds golangci-lint with the plugin, at the
// version .custom-gcl.yml names, and runs it on testdata/mistake with the
// .golangci.yml settings of the docs: it must exit with status 1 and
// report, from the ratelimitgen linter, exactly the errors ratelimitgen
// reports for package bad at the same positions, and the missing
// generated file of package missing.
func TestCustomGolangciLint(t *testing.T) {
	custom := buildCustom(t, customVersion(t))
	mod, err := filepath.Abs(filepath.Join("testdata", "mistake"))
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOLANGCI_LINT_CACHE="+t.TempDir(), "GOFLAGS=", "GOWORK=off")
	out, stderr, code := run(t, mod, env, custom, "run", "--output.json.path=stdout", "--output.text.path=stderr", "--show-stats=false", "./...")
	if code != 1 {
		t.Fatalf("custom golangci-lint run: exit status %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	var report struct {
		Issues []struct {
			FromLinter string
			Text       string
			Pos        struct {
				Filename     string
				Line, Column int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("golangci-lint's JSON: %v\n%s", err, out)
	}
	var got []string
	for _, is := range report.Issues {
		if is.FromLinter != "ratelimitgen" {
			t.Errorf("issue from linter %s: %s", is.FromLinter, is.Text)
			continue
		}
		got = append(got, fmt.Sprintf("%s:%d:%d: %s", filepath.ToSlash(is.Pos.Filename), is.Pos.Line, is.Pos.Column, is.Text))
	}

	generator := filepath.Join(t.TempDir(), "ratelimitgen")
	if msg, _, code := run(t, ".", nil, "go", "build", "-o", generator, rootModule+"/cmd/ratelimitgen"); code != 0 {
		t.Fatalf("go build ratelimitgen: %s", msg)
	}
	_, gen, code := run(t, filepath.Join(mod, "bad"), env, generator)
	if code != 1 || gen == "" {
		t.Fatalf("ratelimitgen in bad: exit status %d, want 1 with errors; stderr:\n%s", code, gen)
	}
	var want []string
	for line := range strings.Lines(strings.TrimSpace(gen)) {
		want = append(want, "bad/"+strings.TrimSpace(line))
	}
	want = append(want, "missing/missing.go:8:2: ratelimit_gen.go is missing: run go generate to write it")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("golangci-lint reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// customVersion returns the golangci-lint version of .custom-gcl.yml, the
// file the docs tell users to copy.
func customVersion(t *testing.T) string {
	t.Helper()
	f, err := os.Open(".custom-gcl.yml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "version: "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal(".custom-gcl.yml has no version")
	return ""
}

// buildCustom builds golangci-lint at version with the plugin of this
// directory, as golangci-lint custom does, except for where the source
// comes from: custom clones golangci-lint's repository with git, which
// needs GitHub; this takes the same tagged tree from the Go module proxy.
// Like custom, it adds a plugins.go that imports the plugin to the
// command's main package, replaces the plugin's module by its directory,
// runs go mod tidy and builds.
func buildCustom(t *testing.T, version string) string {
	t.Helper()
	plugin, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(plugin, "..", "..")
	dir := t.TempDir()
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	goIn := func(args ...string) string {
		t.Helper()
		out, stderr, code := run(t, dir, env, "go", args...)
		if code != 0 {
			t.Fatalf("go %s: %s%s", strings.Join(args, " "), out, stderr)
		}
		return out
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(goIn("mod", "download", "-json", golangciLint+"@"+version)), &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s@%s: %v %s", golangciLint, version, err, mod.Error)
	}
	mainGo, err := os.ReadFile(filepath.Join(mod.Dir, "cmd", "golangci-lint", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "main.go"), string(mainGo))
	write(t, filepath.Join(dir, "plugins.go"), "package main\n\nimport _ \""+pluginModule+"\"\n")
	goIn("mod", "init", "custom-gcl")
	goIn("mod", "edit", "-require", golangciLint+"@"+version, "-replace", pluginModule+"="+plugin, "-replace", rootModule+"="+root)
	goIn("mod", "tidy")
	bin := filepath.Join(dir, "custom-gcl")
	goIn("build", "-o", bin, ".")
	return bin
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs the command in dir with env (the test's if nil) and returns its
// stdout, stderr and exit status; it fails the test if it cannot start.
func run(t *testing.T, dir string, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), 0
}
