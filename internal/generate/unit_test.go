package generate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestGenerateUnitAgreesWithGenerate gives GenerateUnit every package of
// testdata as go vet type-checks it, with its generated file written and
// with its tests, and checks that it returns what Generate returns: for
// the cases that generate, the very files written (none stale) and their
// golden warnings; for the cases that fail, the errors and warnings of a
// run in the package's directory, as go generate runs ratelimitgen. A
// case that does not compile is left out, as go vet does not analyze such
// a package.
func TestGenerateUnitAgreesWithGenerate(t *testing.T) {
	ctx := context.Background()
	mod, env, okCases, errCases := cases(t)
	written := generateOK(t, Config{Dir: mod, Env: env}, patterns(okCases)...)
	if err := Write(written.Files); err != nil {
		t.Fatal(err)
	}
	pkgs := vetPackages(t, mod, env, append(patterns(okCases), patterns(errCases)...))
	compared := 0
	for _, c := range append(okCases, errCases...) {
		var (
			own      []*packages.Package
			errs     ErrorList
			warnings []Diagnostic
			files    []File
		)
		for _, p := range pkgs {
			if strings.HasPrefix(p.Dir+string(filepath.Separator), c.dir+string(filepath.Separator)) {
				own = append(own, p)
			}
		}
		if slices.ContainsFunc(own, func(p *packages.Package) bool { return len(p.Errors) > 0 }) {
			t.Logf("%s: left out, it does not compile", c.name)
			continue
		}
		for _, p := range own {
			res, err := GenerateUnit(ctx, Config{Env: env}, Unit{
				Fset: p.Fset, Files: p.Syntax, Types: p.Types, Info: p.TypesInfo, Sizes: p.TypesSizes,
				IgnoredFiles: p.IgnoredFiles, HasDirectives: func(string) bool { return true },
			})
			var list ErrorList
			switch {
			case errors.As(err, &list):
				errs = append(errs, list...)
			case err != nil:
				t.Fatalf("%s: GenerateUnit(%s): %v", c.name, p.ID, err)
			default:
				files = append(files, res.Files...)
			}
			warnings = append(warnings, res.Warnings...)
		}
		compared++
		if slices.Contains(errCases, c) {
			var wantErrs ErrorList
			var wantWarnings []Diagnostic
			for _, p := range own {
				res, err := Generate(ctx, Config{Dir: p.Dir, Env: env})
				var list ErrorList
				if errors.As(err, &list) {
					wantErrs = append(wantErrs, list...)
				} else if err != nil {
					t.Fatalf("%s: Generate in %s: %v", c.name, p.Dir, err)
				}
				wantWarnings = append(wantWarnings, res.Warnings...)
			}
			compareDiagnostics(t, c, "errors", errs, wantErrs)
			compareDiagnostics(t, c, "warnings", warnings, wantWarnings)
			continue
		}
		compareDiagnostics(t, c, "errors", errs, nil)
		compareFile(t, c.want("warnings.txt"), formatDiagnostics(c, sortDiagnostics(warnings)))
		for _, w := range written.Files {
			if strings.HasPrefix(w.Path, c.dir+string(filepath.Separator)) && !slices.ContainsFunc(files, func(f File) bool { return f.Path == w.Path }) {
				t.Errorf("%s: GenerateUnit returns no %s", c.name, w.Path)
			}
		}
		if stale, err := Stale(files); err != nil || len(stale) > 0 {
			t.Errorf("%s: GenerateUnit finds %v stale (err %v) right after Generate wrote them", c.name, stale, err)
		}
	}
	if compared < len(okCases)+len(errCases)/2 {
		t.Errorf("compared %d of %d cases; want most of them", compared, len(okCases)+len(errCases))
	}
}

// vetPackages loads the packages matching patterns as go vet type-checks
// them: under no generator tag, so with their generated files, and with
// their _test.go files where they have some (the test variant in place of
// the package, and the external test package).
func vetPackages(t *testing.T, dir string, env, patterns []string) []*packages.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedTypesSizes,
		Dir:   dir,
		Env:   env,
		Tests: true,
	}, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	for _, p := range pkgs {
		if strings.HasSuffix(p.ID, ".test]") && !strings.HasSuffix(p.PkgPath, "_test") {
			tested[p.PkgPath] = true
		}
	}
	return slices.DeleteFunc(pkgs, func(p *packages.Package) bool {
		return strings.HasSuffix(p.ID, ".test") || p.ID == p.PkgPath && tested[p.PkgPath]
	})
}

// compareFile compares got with the file at path, which is absent for
// empty output.
func compareFile(t *testing.T, path string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: GenerateUnit gives\n%s\nwant\n%s", path, got, want)
	}
}

// compareDiagnostics compares the diagnostics of GenerateUnit with those
// of Generate.
func compareDiagnostics(t *testing.T, c goldenCase, kind string, got, want []Diagnostic) {
	t.Helper()
	g, w := formatDiagnostics(c, sortDiagnostics(got)), formatDiagnostics(c, sortDiagnostics(want))
	if !bytes.Equal(g, w) {
		t.Errorf("%s: GenerateUnit's %s:\n%s\nGenerate's:\n%s", c.name, kind, g, w)
	}
}
