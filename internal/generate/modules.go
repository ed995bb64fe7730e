package generate

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
)

// moduleRun is the part of a run that loads packages from one module: the
// directory the go command runs in, and the patterns, relative to it.
type moduleRun struct {
	dir      string
	patterns []string
}

// byModule splits patterns by the module that holds the directory each one
// names, so that a run from a repository's root reaches a module nested in
// it (ratelimitgen -check ./examples/...), or any other module a directory
// pattern names, which the go command, confined to the current module,
// refuses. Import paths, and directories of dir's own module, stay in
// dir's run; the others are rewritten relative to their module's root.
// Runs keep the order in which their patterns first appear, dir's own
// first; with no patterns, dir's run loads ".".
func byModule(dir string, patterns []string) []moduleRun {
	home := moduleRoot(dir)
	runs := []moduleRun{{dir: dir}}
	index := map[string]int{}
	for _, p := range patterns {
		root, rel, ok := nestedPattern(dir, home, p)
		if !ok {
			runs[0].patterns = append(runs[0].patterns, p)
			continue
		}
		i, seen := index[root]
		if !seen {
			i = len(runs)
			index[root] = i
			runs = append(runs, moduleRun{dir: root})
		}
		runs[i].patterns = append(runs[i].patterns, rel)
	}
	if len(runs[0].patterns) == 0 && len(runs) > 1 {
		runs = runs[1:]
	}
	return runs
}

// nestedPattern reports whether the directory pattern p, relative to dir,
// lies in a module other than home, and returns that module's root and p
// relative to it.
func nestedPattern(dir, home, p string) (root, rel string, ok bool) {
	if !build.IsLocalImport(p) && !filepath.IsAbs(p) {
		return "", "", false
	}
	// The directory is what precedes the first element with a wildcard.
	elems := strings.Split(filepath.ToSlash(p), "/")
	fixed := len(elems)
	for i, e := range elems {
		if strings.Contains(e, "...") {
			fixed = i
			break
		}
	}
	d := filepath.FromSlash(strings.Join(elems[:fixed], "/"))
	if !filepath.IsAbs(d) {
		d = filepath.Join(dir, d)
	}
	root = moduleRoot(d)
	if root == "" || root == home {
		return "", "", false
	}
	within, err := filepath.Rel(root, d)
	if err != nil {
		return "", "", false
	}
	parts := []string{"."}
	if within != "." {
		parts = append(parts, filepath.ToSlash(within))
	}
	parts = append(parts, elems[fixed:]...)
	return root, strings.Join(parts, "/"), true
}

// moduleRoot returns the nearest directory at or above d that holds a
// go.mod, or "" if there is none.
func moduleRoot(d string) string {
	for {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !fi.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}
