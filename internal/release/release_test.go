package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModulesAreConsistent: in this repository, every module's requirement
// of another of its modules names one release version and is replaced by
// that module's directory.
func TestModulesAreConsistent(t *testing.T) {
	mods, err := loadModules("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 5 {
		t.Fatalf("found %d modules, want the core, extra/ and examples at least", len(mods))
	}
	for _, err := range check(mods) {
		t.Error(err)
	}
}

// writeTree writes go.mod files, by directory, into a new temporary tree.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for dir, content := range files {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "go.mod"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestCheckFindsEachProblem: an unreleasable version, two versions, a
// missing replace, a replace to the wrong directory and a requirement of a
// module the repository does not hold are each reported.
func TestCheckFindsEachProblem(t *testing.T) {
	root := writeTree(t, map[string]string{
		".":          "module github.com/ratelimitgen/ratelimitgen\n\ngo 1.25\n",
		"extra/a":    "module github.com/ratelimitgen/ratelimitgen/extra/a\n\ngo 1.25\n\nrequire github.com/ratelimitgen/ratelimitgen v0.0.0\n\nreplace github.com/ratelimitgen/ratelimitgen => ../..\n",
		"extra/b":    "module github.com/ratelimitgen/ratelimitgen/extra/b\n\ngo 1.25\n\nrequire github.com/ratelimitgen/ratelimitgen v0.1.0\n",
		"extra/c":    "module github.com/ratelimitgen/ratelimitgen/extra/c\n\ngo 1.25\n\nrequire (\n\tgithub.com/ratelimitgen/ratelimitgen v0.2.0\n\tgithub.com/ratelimitgen/ratelimitgen/extra/gone v0.2.0\n)\n\nreplace github.com/ratelimitgen/ratelimitgen => ../\n",
		"testdata/x": "module example.com/ignored\n\ngo 1.25\n\nrequire github.com/ratelimitgen/ratelimitgen v0.0.0\n",
	})
	mods, err := loadModules(root)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, err := range check(mods) {
		msgs = append(msgs, err.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		"extra/a requires github.com/ratelimitgen/ratelimitgen v0.0.0: require a release version",
		"extra/b requires github.com/ratelimitgen/ratelimitgen without replacing it by ../..",
		"extra/c requires github.com/ratelimitgen/ratelimitgen v0.2.0, others v0.1.0",
		"extra/c replaces github.com/ratelimitgen/ratelimitgen by ../, not by its directory ../..",
		"extra/c requires github.com/ratelimitgen/ratelimitgen/extra/gone, which no go.mod of this repository declares",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no error %q among:\n%s", want, all)
		}
	}
	if len(msgs) != 5 {
		t.Errorf("%d errors, want 5:\n%s", len(msgs), all)
	}
}

// TestSetVersion: every requirement of a module of the repository, and no
// other, gets the version; a tree set so checks clean.
func TestSetVersion(t *testing.T) {
	root := writeTree(t, map[string]string{
		".":        "module github.com/ratelimitgen/ratelimitgen\n\ngo 1.25\n",
		"extra/a":  "module github.com/ratelimitgen/ratelimitgen/extra/a\n\ngo 1.25\n\nrequire (\n\tgithub.com/ratelimitgen/ratelimitgen v0.0.0\n\tgolang.org/x/mod v0.40.0\n)\n\nreplace github.com/ratelimitgen/ratelimitgen => ../..\n",
		"examples": "module github.com/ratelimitgen/ratelimitgen/examples\n\ngo 1.25\n\nrequire (\n\tgithub.com/ratelimitgen/ratelimitgen v0.0.0\n\tgithub.com/ratelimitgen/ratelimitgen/extra/a v0.0.0\n)\n\nreplace (\n\tgithub.com/ratelimitgen/ratelimitgen => ../\n\tgithub.com/ratelimitgen/ratelimitgen/extra/a => ../extra/a\n)\n",
	})
	mods, err := loadModules(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{mods[0].tagPrefix(), mods[1].tagPrefix(), mods[2].tagPrefix()}; strings.Join(got, ",") != ",examples/,extra/a/" {
		t.Errorf("tag prefixes %q: the core first, then by directory", got)
	}
	files, err := setVersion(mods, "v0.3.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("%d files changed, want 2", len(files))
	}
	a := string(files[filepath.Join("extra", "a", "go.mod")])
	if !strings.Contains(a, "github.com/ratelimitgen/ratelimitgen v0.3.0") || !strings.Contains(a, "golang.org/x/mod v0.40.0") {
		t.Errorf("extra/a/go.mod:\n%s", a)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mods, err = loadModules(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range check(mods) {
		t.Error(err)
	}
}
