package generate

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var (
	update = flag.Bool("update", false, "rewrite the golden files under testdata/<case>/want")
)

// testModulePath is the module path of the temporary module the cases are
// copied into. It lies below this module's path so that the end-to-end
// test may import internal/redistest, and names no directory of this
// module, so that no import is ambiguous.
const testModulePath = "github.com/ratelimitgen/ratelimitgen/testmod"

// goldenCase is one directory of testdata: an input package (or several)
// and the want directory with the expected output: ratelimit_gen.go files
// at the packages' relative paths, errors.txt, warnings.txt.
type goldenCase struct {
	name string
	src  string // testdata/<name>
	dir  string // its copy in the temporary module
}

func (c goldenCase) want(name string) string { return filepath.Join(c.src, "want", name) }

// The cases of testdata are tested in layers that run alone: the golden
// comparison of each case (TestGolden/<case>), a second run on the written
// output (TestSecondRunStable), the property check of the written wrappers
// (TestVerifyEveryCase), go vet of all of them (TestVetEveryCase) and under other
// GOOS values (TestVetOtherGOOS); the end-to-end package runs against Redis
// and in memory in endtoend_test.go.

// cases copies every case of testdata into a new temporary module and
// returns those that generate and those that fail, by their want/errors.txt.
func cases(t *testing.T) (mod string, env []string, okCases, errCases []goldenCase) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, env = newTestModule(t, repo)
	entries, err := os.ReadDir(filepath.Join(repo, "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c := goldenCase{name: e.Name(), src: filepath.Join(repo, "testdata", e.Name()), dir: filepath.Join(mod, e.Name())}
		copyCase(t, c)
		if _, err := os.Stat(c.want("errors.txt")); err == nil {
			errCases = append(errCases, c)
		} else {
			okCases = append(okCases, c)
		}
	}
	if len(okCases) == 0 || len(errCases) == 0 {
		t.Fatalf("testdata has %d cases that generate and %d that fail; want both kinds", len(okCases), len(errCases))
	}
	return mod, env, okCases, errCases
}

// TestGolden generates each case of testdata, as one run over the case's
// packages and as go generate ./... does it, one run in each package's
// directory, and compares the output with the golden files: both ways
// give the same bytes. A failing case's errors are compared in the first
// way only: a package outside the run reports its own problems when it is
// generated.
func TestGolden(t *testing.T) {
	mod, env, okCases, errCases := cases(t)
	for _, c := range okCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := generateOK(t, Config{Dir: mod, Env: env}, "./"+c.name+"/...")
			if len(res.Files) == 0 {
				t.Fatalf("no file generated for case %s", c.name)
			}
			for _, f := range res.Files {
				rel, _ := filepath.Rel(c.dir, f.Path)
				compareGolden(t, c.want(rel), f.Content)
			}
			checkNoStrayGolden(t, c, res.Files)
			compareGolden(t, c.want("warnings.txt"), formatDiagnostics(c, res.Warnings))
			if *update || t.Failed() {
				return
			}
			for _, dir := range packageDirs(t, c.dir) {
				one := generateOK(t, Config{Dir: dir, Env: env})
				for _, f := range res.Files {
					if filepath.Dir(f.Path) != dir {
						continue
					}
					i := slices.IndexFunc(one.Files, func(g File) bool { return g.Path == f.Path })
					rel, _ := filepath.Rel(c.dir, f.Path)
					switch {
					case i < 0:
						t.Errorf("a run in %s alone generates no %s", filepath.Dir(rel), rel)
					case !bytes.Equal(one.Files[i].Content, f.Content):
						t.Errorf("a run in %s alone generates another %s than a run over the case:\n%s", filepath.Dir(rel), rel, lineDiff(string(f.Content), string(one.Files[i].Content)))
					}
				}
			}
		})
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := Generate(context.Background(), Config{Dir: mod, Env: env}, "./"+c.name+"/...")
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Generate: got %v, want an ErrorList", err)
			}
			if len(res.Files) != 0 {
				t.Errorf("Generate returned %d files along with errors; want none", len(res.Files))
			}
			compareGolden(t, c.want("errors.txt"), formatDiagnostics(c, list))
			compareGolden(t, c.want("warnings.txt"), formatDiagnostics(c, res.Warnings))
		})
	}
}

// generateOK runs Generate and fails the test on errors.
func generateOK(t *testing.T, cfg Config, patterns ...string) *Result {
	t.Helper()
	res, err := Generate(context.Background(), cfg, patterns...)
	if err != nil {
		var list ErrorList
		if errors.As(err, &list) {
			t.Fatalf("Generate %v in %s failed:\n%s", patterns, cfg.Dir, list.Format(cfg.Dir))
		}
		t.Fatalf("Generate %v in %s: %v", patterns, cfg.Dir, err)
	}
	return res
}

// packageDirs returns dir and the directories below it that hold Go files.
func packageDirs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		if p := filepath.Dir(path); !slices.Contains(out, p) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// generated is the module of every case that generates, with its output
// written by one run over all of them, as the layers after the golden
// comparison use it.
func generated(t *testing.T) (mod string, env []string, okCases []goldenCase) {
	t.Helper()
	mod, env, okCases, _ = cases(t)
	res := generateOK(t, Config{Dir: mod, Env: env}, patterns(okCases)...)
	if err := Write(res.Files); err != nil {
		t.Fatal(err)
	}
	return mod, env, okCases
}

// A second run, which finds the output of the first on disk (and must
// ignore it while loading), gives the same bytes.
func TestSecondRunStable(t *testing.T) {
	mod, env, okCases := generated(t)
	again := generateOK(t, Config{Dir: mod, Env: env}, patterns(okCases)...)
	if stale, err := Stale(again.Files); err != nil || len(stale) > 0 {
		t.Fatalf("second run differs from the first for %v (err %v)", stale, err)
	}
}

// Every wrapper of every case enforces the limits of every method it gets
// that a directive limits, as Verify proves from the directives and the
// written code on their own.
func TestVerifyEveryCase(t *testing.T) {
	mod, env, okCases := generated(t)
	if err := Verify(context.Background(), Config{Dir: mod, Env: env}, patterns(okCases)...); err != nil {
		var list ErrorList
		if errors.As(err, &list) {
			t.Fatalf("Verify found wrappers that leave limited methods unlimited:\n%s", list.Format(mod))
		}
		t.Fatal(err)
	}
}

// Every generated file compiles and vets.
func TestVetEveryCase(t *testing.T) {
	mod, env, okCases := generated(t)
	goCmd(t, mod, env, append([]string{"vet"}, patterns(okCases)...)...)
}

// Wrappers of types under build constraints are generated under the same
// constraints, so a package builds where those files are left out as well
// as where they are built.
func TestVetOtherGOOS(t *testing.T) {
	mod, env, _, _ := cases(t)
	var dirs []string
	for _, c := range []string{"buildtags", "embedacross"} {
		dirs = append(dirs, "./"+c+"/...")
	}
	res := generateOK(t, Config{Dir: mod, Env: env}, dirs...)
	if err := Write(res.Files); err != nil {
		t.Fatal(err)
	}
	for _, goos := range []string{"linux", "windows"} {
		goCmd(t, mod, append(env, "GOOS="+goos), append([]string{"vet"}, dirs...)...)
	}
}

// newTestModule creates the temporary module that requires this one
// through a replace directive, and the environment to build in it: the
// module cache and build cache are the user's, so nothing is downloaded
// and builds are incremental.
func newTestModule(t *testing.T, repo string) (dir string, env []string) {
	t.Helper()
	return newModule(t, repo, testModulePath)
}

// newModule is newTestModule for a module of the given path.
func newModule(t *testing.T, repo, path string) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	env, err := writeModule(dir, repo, path)
	if err != nil {
		t.Fatal(err)
	}
	return dir, env
}

// writeModule writes the go.mod and go.sum of the module at path in dir,
// which requires this module, at repo, and returns the environment to
// build in it.
func writeModule(dir, repo, path string) ([]string, error) {
	goMod := "module " + path + "\n\ngo 1.25\n\nrequire github.com/ratelimitgen/ratelimitgen v0.0.0\n\nreplace github.com/ratelimitgen/ratelimitgen => " + repo + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return nil, err
	}
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off"), nil
}

// copyCase copies a case's sources, without its want directory, into the
// temporary module.
func copyCase(t *testing.T, c goldenCase) {
	t.Helper()
	if err := copySources(c.src, c.dir); err != nil {
		t.Fatal(err)
	}
}

// copySources copies the tree at src, without its want directory, to dst.
func copySources(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == "want" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

func patterns(cases []goldenCase) []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = "./" + c.name + "/..."
	}
	return out
}

// formatDiagnostics returns the diagnostics of case c, one per line, with
// file names relative to the case's directory.
func formatDiagnostics(c goldenCase, ds []Diagnostic) []byte {
	var b bytes.Buffer
	for _, d := range ds {
		if strings.HasPrefix(d.Pos.Filename, c.dir+string(filepath.Separator)) {
			b.WriteString(d.Format(c.dir))
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// compareGolden compares got with the golden file at path, or rewrites it
// with -update. An absent golden file stands for empty output.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if len(got) == 0 {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run go test ./internal/generate -update to accept it):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// checkNoStrayGolden fails if want holds a generated file that the run no
// longer produces.
func checkNoStrayGolden(t *testing.T, c goldenCase, got []File) {
	t.Helper()
	_ = filepath.WalkDir(filepath.Join(c.src, "want"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(filepath.Join(c.src, "want"), path)
		if !slices.ContainsFunc(got, func(f File) bool { return f.Path == filepath.Join(c.dir, rel) }) {
			if *update {
				_ = os.Remove(path)
			} else {
				t.Errorf("golden file %s is not generated any more", path)
			}
		}
		return nil
	})
}

// lineDiff shows the lines that differ between want and got, with their
// line numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			shown++
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// goCmd runs the go command in dir and fails the test with its output if
// it fails.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
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

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
