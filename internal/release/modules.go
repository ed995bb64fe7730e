package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// corePath is the module path of the core; every other module of the
// repository lives below it.
const corePath = "github.com/ratelimitgen/ratelimitgen"

// module is one go.mod of the repository.
type module struct {
	dir  string // relative to the repository's root, "." for the core
	path string
	file *modfile.File
}

// tagPrefix is what a tag of m starts with: "" for the core, the module's
// directory and a slash for a nested one, as the go command expects.
func (m module) tagPrefix() string {
	if m.dir == "." {
		return ""
	}
	return filepath.ToSlash(m.dir) + "/"
}

// loadModules reads every go.mod below root but those of testdata, the
// core first and the others in the order of their directories.
func loadModules(root string) ([]module, error) {
	var mods []module
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, data, nil)
		if err != nil {
			return err
		}
		if f.Module == nil {
			return fmt.Errorf("%s: no module line", p)
		}
		dir, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		mods = append(mods, module{dir: dir, path: f.Module.Mod.Path, file: f})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(mods, func(a, b module) int {
		if (a.dir == ".") != (b.dir == ".") {
			if a.dir == "." {
				return -1
			}
			return 1
		}
		return strings.Compare(a.dir, b.dir)
	})
	if len(mods) == 0 || mods[0].path != corePath {
		return nil, fmt.Errorf("%s is not the root of %s", root, corePath)
	}
	return mods, nil
}

// check reports what would keep a user from fetching the modules once
// tagged, or a developer from building them from this tree: each
// requirement of a module of this repository must name one version, the
// same everywhere, that a tag can give (not v0.0.0), and be replaced by
// the directory that holds that module, so that the tree builds before
// the tag exists.
func check(mods []module) []error {
	byPath := map[string]module{}
	for _, m := range mods {
		byPath[m.path] = m
	}
	var errs []error
	version := ""
	for _, m := range mods {
		replaced := map[string]string{}
		for _, r := range m.file.Replace {
			replaced[r.Old.Path] = r.New.Path
		}
		for _, r := range m.file.Require {
			dep, ok := byPath[r.Mod.Path]
			if !ok {
				if strings.HasPrefix(r.Mod.Path, corePath+"/") {
					errs = append(errs, fmt.Errorf("%s requires %s, which no go.mod of this repository declares", m.dir, r.Mod.Path))
				}
				continue
			}
			v := r.Mod.Version
			switch {
			case !semver.IsValid(v) || semver.Prerelease(v) != "" || semver.Build(v) != "" || v == "v0.0.0":
				errs = append(errs, fmt.Errorf("%s requires %s %s: require a release version (vX.Y.Z) that a tag will provide", m.dir, r.Mod.Path, v))
			case version == "":
				version = v
			case v != version:
				errs = append(errs, fmt.Errorf("%s requires %s %s, others %s: every module of this repository requires the same version", m.dir, r.Mod.Path, v, version))
			}
			want, err := filepath.Rel(m.dir, dep.dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got, ok := replaced[r.Mod.Path]
			if !ok {
				errs = append(errs, fmt.Errorf("%s requires %s without replacing it by %s: the tree would not build before the tag", m.dir, r.Mod.Path, want))
			} else if filepath.Clean(got) != want {
				errs = append(errs, fmt.Errorf("%s replaces %s by %s, not by its directory %s", m.dir, r.Mod.Path, got, want))
			}
		}
	}
	return errs
}

// setVersion makes every requirement of a module of this repository name
// version, and returns the go.mod files it changed, formatted.
func setVersion(mods []module, version string) (map[string][]byte, error) {
	byPath := map[string]bool{}
	for _, m := range mods {
		byPath[m.path] = true
	}
	out := map[string][]byte{}
	for _, m := range mods {
		changed := false
		for _, r := range m.file.Require {
			if byPath[r.Mod.Path] && r.Mod.Version != version {
				if err := m.file.AddRequire(r.Mod.Path, version); err != nil {
					return nil, err
				}
				changed = true
			}
		}
		if !changed {
			continue
		}
		data, err := m.file.Format()
		if err != nil {
			return nil, err
		}
		out[filepath.Join(m.dir, "go.mod")] = data
	}
	return out, nil
}
