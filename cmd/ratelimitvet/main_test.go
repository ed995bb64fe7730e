package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGoVet runs go vet -vettool with the built command on a package with
// mistakes, where it must exit with status 1 and print the errors that
// ratelimitgen prints for the package, at the same positions, and on a
// package whose generated file is up to date, where it must print nothing
// and exit with status 0.
func TestGoVet(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	vettool := filepath.Join(bin, "ratelimitvet")
	generator := filepath.Join(bin, "ratelimitgen")
	build(t, repo, vettool, "./cmd/ratelimitvet")
	build(t, repo, generator, "./cmd/ratelimitgen")

	const bad = "analysis/ratelimitcheck/testdata/directives"
	out, code := run(t, repo, "go", "vet", "-vettool="+vettool, "./"+bad)
	if code != 1 {
		t.Fatalf("go vet on %s: exit status %d, want 1; output:\n%s", bad, code, out)
	}
	var vet []string
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			vet = append(vet, strings.TrimPrefix(line, bad+"/"))
		}
	}
	gen, code := run(t, filepath.Join(repo, bad), generator)
	if code != 1 {
		t.Fatalf("ratelimitgen in %s: exit status %d, want 1; output:\n%s", bad, code, gen)
	}
	want := strings.Split(strings.TrimSpace(gen), "\n")
	slices.Sort(vet)
	slices.Sort(want)
	if !slices.Equal(vet, want) {
		t.Errorf("go vet reports\n%s\nratelimitgen reports\n%s", strings.Join(vet, "\n"), strings.Join(want, "\n"))
	}

	const clean = "analysis/ratelimitcheck/testdata/clean"
	if out, code := run(t, repo, "go", "vet", "-vettool="+vettool, "./"+clean); code != 0 || out != "" {
		t.Errorf("go vet on %s: exit status %d, output %q; want 0 and nothing", clean, code, out)
	}
}

func build(t *testing.T, dir, out, pkg string) {
	t.Helper()
	if msg, code := run(t, dir, "go", "build", "-o", out, pkg); code != 0 {
		t.Fatalf("go build %s: %s", pkg, msg)
	}
}

// run runs the command in dir and returns its combined output and exit
// status; it fails the test if the command cannot start.
func run(t *testing.T, dir, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out), 0
}
