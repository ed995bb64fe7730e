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
	"syscall"
	"testing"
)

var (
	update = flag.Bool("update", false, "rewrite the golden files under testdata/<case>/want")
	bench  = flag.Bool("e2e.bench", false, "also run the benchmarks of the generated end-to-end package and log them")
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

// TestGolden generates every case of testdata in one temporary module,
// compares the output with the golden files, then compiles and vets all
// generated code with one go vet, and runs the end-to-end test against
// real Redis and the memory limiter with one go test.
func TestGolden(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, env := newTestModule(t, repo)

	var okCases, errCases []goldenCase
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
	ctx := context.Background()
	cfg := Config{Dir: mod, Env: env}

	// The cases that generate, in one run.
	res, err := Generate(ctx, cfg, patterns(okCases)...)
	if err != nil {
		var list ErrorList
		if errors.As(err, &list) {
			t.Fatalf("Generate failed:\n%s", list.Format(mod))
		}
		t.Fatalf("Generate: %v", err)
	}
	for _, c := range okCases {
		t.Run(c.name, func(t *testing.T) {
			var got []File
			for _, f := range res.Files {
				if strings.HasPrefix(f.Path, c.dir+string(filepath.Separator)) {
					got = append(got, f)
				}
			}
			if len(got) == 0 {
				t.Fatalf("no file generated for case %s", c.name)
			}
			for _, f := range got {
				rel, _ := filepath.Rel(c.dir, f.Path)
				compareGolden(t, c.want(rel), f.Content)
			}
			checkNoStrayGolden(t, c, got)
			compareGolden(t, c.want("warnings.txt"), formatDiagnostics(c, res.Warnings))
		})
	}
	if err := Write(res.Files); err != nil {
		t.Fatal(err)
	}
	// A second run, which now finds the output of the first on disk (and
	// must ignore it while loading), gives the same bytes.
	again, err := Generate(ctx, cfg, patterns(okCases)...)
	if err != nil {
		t.Fatalf("second Generate: %v", err)
	}
	if stale, err := Stale(again.Files); err != nil || len(stale) > 0 {
		t.Fatalf("second run differs from the first for %v (err %v)", stale, err)
	}

	// The failing cases, in one run too: the errors of all of them come
	// back together, and each case's share must match its golden file.
	res, err = Generate(ctx, cfg, patterns(errCases)...)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Generate of the failing cases: got %v, want an ErrorList", err)
	}
	if len(res.Files) != 0 {
		t.Errorf("Generate returned %d files along with errors; want none", len(res.Files))
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			compareGolden(t, c.want("errors.txt"), formatDiagnostics(c, list))
			compareGolden(t, c.want("warnings.txt"), formatDiagnostics(c, res.Warnings))
		})
	}
	if t.Failed() {
		return
	}

	// Every generated file compiles and vets, and the end-to-end package
	// runs against Redis and in memory.
	goCmd(t, mod, env, append([]string{"vet"}, patterns(okCases)...)...)
	// Wrappers of types under build constraints are generated under the
	// same constraints, so the package builds where those files are left
	// out as well as where they are built.
	for _, goos := range []string{"linux", "windows"} {
		goCmd(t, mod, append(env, "GOOS="+goos), "vet", "./buildtags/")
	}
	goCmd(t, mod, env, "test", "-count=1", "./e2e/")
	// On a 32-bit platform int(x) would wrap a large uint64 or int64 cost
	// around to a small one: the memory half runs there too (the Redis
	// half needs nothing more to show it).
	env386 := append(env, "GOARCH=386")
	if can386(t, mod, env386) {
		goCmd(t, mod, env386, "test", "-count=1", "-run=Memory", "./e2e/")
	} else {
		// Some sandboxes (gVisor among them) run no 32-bit binaries: the
		// package is then at least compiled and vetted for 386.
		t.Log("this host cannot execute GOARCH=386 binaries; the 386 end-to-end tests are compiled and vetted, not run")
		goCmd(t, mod, env386, "vet", "./e2e/")
		goCmd(t, mod, env386, "test", "-c", "-o", filepath.Join(t.TempDir(), "e2e386.test"), "./e2e/")
	}
	if *bench {
		out := goCmd(t, mod, env, "test", "-run=^$", "-bench=.", "-benchmem", "./e2e/")
		t.Logf("benchmarks of the generated code:\n%s", out)
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
	goMod := "module " + path + "\n\ngo 1.25\n\nrequire github.com/ratelimitgen/ratelimitgen v0.0.0\n\nreplace github.com/ratelimitgen/ratelimitgen => " + repo + "\n"
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(goMod))
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), sum)
	env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	return dir, env
}

// copyCase copies a case's sources, without its want directory, into the
// temporary module.
func copyCase(t *testing.T, c goldenCase) {
	t.Helper()
	err := filepath.WalkDir(c.src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.src, path)
		if d.IsDir() {
			if rel == "want" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(c.dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(c.dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
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

// can386 reports whether this host executes GOARCH=386 binaries, by
// building and running a program that prints nothing.
func can386(t *testing.T, dir string, env []string) bool {
	t.Helper()
	src := filepath.Join(t.TempDir(), "probe386.go")
	writeFile(t, src, []byte("package main\n\nfunc main() {}\n"))
	bin := filepath.Join(t.TempDir(), "probe386")
	goCmd(t, dir, env, "build", "-o", bin, src)
	err := exec.Command(bin).Run()
	if err != nil && !errors.Is(err, syscall.ENOEXEC) {
		t.Fatalf("running a GOARCH=386 program: %v", err)
	}
	return err == nil
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
