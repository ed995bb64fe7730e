package generate

import (
	"context"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var bench = flag.Bool("e2e.bench", false, "also run the benchmarks of the generated end-to-end package and log them (TestE2EBenchmarks)")

// The end-to-end package, testdata/e2e, calls the generated wrappers
// against real Redis and the memory limiter. Each of its tests is a test
// here, TestE2E<name>, so that go test -list shows it and -run picks it:
// they share one generation of the package and one build of its test
// binary, each running the binary for its own test.

func TestE2EMemoryLimiter(t *testing.T)               { runE2E(t, "TestMemoryLimiter") }
func TestE2ERedisLimiter(t *testing.T)                { runE2E(t, "TestRedisLimiter") }
func TestE2ELimiterErrorReturnedAsIs(t *testing.T)    { runE2E(t, "TestLimiterErrorReturnedAsIs") }
func TestE2ECostZeroSkipsLimiter(t *testing.T)        { runE2E(t, "TestCostZeroSkipsLimiter") }
func TestE2EEmbeddingMemory(t *testing.T)             { runE2E(t, "TestEmbeddingMemory") }
func TestE2EEmbeddingRedis(t *testing.T)              { runE2E(t, "TestEmbeddingRedis") }
func TestE2EGenericMemory(t *testing.T)               { runE2E(t, "TestGenericMemory") }
func TestE2EGenericRedis(t *testing.T)                { runE2E(t, "TestGenericRedis") }
func TestE2ENamesMemory(t *testing.T)                 { runE2E(t, "TestNamesMemory") }
func TestE2ENamesRedis(t *testing.T)                  { runE2E(t, "TestNamesRedis") }
func TestE2EPlansMemory(t *testing.T)                 { runE2E(t, "TestPlansMemory") }
func TestE2EPlansRedis(t *testing.T)                  { runE2E(t, "TestPlansRedis") }
func TestE2EPlansLimitOfEachCall(t *testing.T)        { runE2E(t, "TestPlansLimitOfEachCall") }
func TestE2EPlansShadowLimitNeverDenies(t *testing.T) { runE2E(t, "TestPlansShadowLimitNeverDenies") }
func TestE2ETimesMemory(t *testing.T)                 { runE2E(t, "TestTimesMemory") }
func TestE2ETimesRedis(t *testing.T)                  { runE2E(t, "TestTimesRedis") }
func TestE2ETypeLevelMemory(t *testing.T)             { runE2E(t, "TestTypeLevelMemory") }
func TestE2ETypeLevelRedis(t *testing.T)              { runE2E(t, "TestTypeLevelRedis") }
func TestE2EWaitMemory(t *testing.T)                  { runE2E(t, "TestWaitMemory") }
func TestE2EWaitRedis(t *testing.T)                   { runE2E(t, "TestWaitRedis") }
func TestE2EEmbeddingWrapper(t *testing.T)            { runE2E(t, "TestEmbeddingWrapper") }
func TestE2EEmbedAcrossMemory(t *testing.T)           { runE2E(t, "TestEmbedAcrossMemory") }
func TestE2EEmbedAcrossRedis(t *testing.T)            { runE2E(t, "TestEmbedAcrossRedis") }
func TestE2EOverridesOfGeneratedLimits(t *testing.T)  { runE2E(t, "TestOverridesOfGeneratedLimits") }
func TestE2EOutcomeMemory(t *testing.T)               { runE2E(t, "TestOutcomeMemory") }
func TestE2EOutcomeRedis(t *testing.T)                { runE2E(t, "TestOutcomeRedis") }

// TestE2EConcurrencyMemory needs memlimit's Concurrency.
func TestE2EConcurrencyMemory(t *testing.T)     { runE2E(t, "TestConcurrencyMemory") }
func TestE2EConcurrencyPermitLost(t *testing.T) { runE2E(t, "TestConcurrencyPermitLost") }

func TestE2EConcurrencyWaitMemory(t *testing.T) { runE2E(t, "TestConcurrencyWaitMemory") }
func TestE2EConcurrencyWaitRedis(t *testing.T)  { runE2E(t, "TestConcurrencyWaitRedis") }
func TestE2ECalendarQuotaMemory(t *testing.T)   { runE2E(t, "TestCalendarQuotaMemory") }
func TestE2ECalendarQuotaRedis(t *testing.T)    { runE2E(t, "TestCalendarQuotaRedis") }
func TestE2EConcurrencyWaitHolder(t *testing.T) { runE2E(t, "TestConcurrencyWaitHolder") }

// TestE2EListComplete fails when a test of testdata/e2e has no TestE2E
// test here, or one here names a test that is gone.
func TestE2EListComplete(t *testing.T) {
	var want []string
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "e2e", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		want = append(want, testFuncs(t, f, "Test")...)
	}
	var got []string
	for _, name := range testFuncs(t, "endtoend_test.go", "TestE2E") {
		if name != "TestE2EListComplete" && name != "TestE2EBenchmarks" && name != "TestE2E386" {
			got = append(got, "Test"+strings.TrimPrefix(name, "TestE2E"))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("endtoend_test.go runs %v; testdata/e2e has %v: add or remove a TestE2E<name> for each", got, want)
	}
}

// testFuncs returns the names of the test functions of file that start
// with prefix.
func testFuncs(t *testing.T, file, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, prefix) {
			out = append(out, fd.Name.Name)
		}
	}
	return out
}

// e2e is the generated end-to-end package, built once for the tests of
// this process.
var e2e struct {
	once sync.Once
	dir  string // the package's directory, where its tests run
	bin  string // its test binary
	err  error
}

// TestMain removes the end-to-end package's module after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if e2e.dir != "" {
		os.RemoveAll(filepath.Dir(e2e.dir))
	}
	os.Exit(code)
}

// runE2E runs the test called name of the end-to-end package.
func runE2E(t *testing.T, name string) {
	e2e.once.Do(func() { e2e.dir, e2e.bin, e2e.err = buildE2E() })
	if e2e.err != nil {
		t.Fatal(e2e.err)
	}
	cmd := exec.Command(e2e.bin, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Dir = e2e.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name+" ") {
		t.Fatalf("%s did not run:\n%s", name, out)
	}
}

// buildE2E generates the end-to-end case in a new module and builds its
// test binary, with the race detector when this test binary has it.
func buildE2E() (dir, bin string, err error) {
	env, mod, err := e2eModule()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(mod, "e2e")
	bin = filepath.Join(mod, "e2e.test")
	args := []string{"test", "-c", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./e2e/")...)
	cmd.Dir, cmd.Env = mod, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", errors.New("building the end-to-end tests: " + err.Error() + "\n" + string(out))
	}
	return dir, bin, nil
}

// e2eModule writes a new module holding the end-to-end case, generated.
func e2eModule() (env []string, mod string, err error) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, "", err
	}
	if mod, err = os.MkdirTemp("", "ratelimitgen-e2e"); err != nil {
		return nil, "", err
	}
	if env, err = writeModule(mod, repo, testModulePath); err != nil {
		return nil, "", err
	}
	if err := copySources(filepath.Join(repo, "testdata", "e2e"), filepath.Join(mod, "e2e")); err != nil {
		return nil, "", err
	}
	res, err := Generate(context.Background(), Config{Dir: mod, Env: env}, "./e2e/...")
	if err != nil {
		var list ErrorList
		if errors.As(err, &list) {
			return nil, "", errors.New("generating the end-to-end case:\n" + list.Format(mod))
		}
		return nil, "", err
	}
	if err := Write(res.Files); err != nil {
		return nil, "", err
	}
	// The property check over the package the tests exercise.
	if err := Verify(context.Background(), Config{Dir: mod, Env: env}, "./e2e/..."); err != nil {
		return nil, "", errors.New("verifying the end-to-end case: " + err.Error())
	}
	return env, mod, nil
}

// TestE2E386 runs the memory half of the end-to-end tests, and the memory
// limiter's own tests, on a 32-bit platform, where int(x) would wrap a
// large uint64 or int64 cost around to a small one, and a 64-bit atomic
// operation panics on a field that is not 64-bit aligned (the Redis half
// needs nothing more to show either).
func TestE2E386(t *testing.T) {
	env, mod, err := e2eModule()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(mod) })
	env386 := append(env, "GOARCH=386")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if can386(t, mod, env386) {
		goCmd(t, mod, env386, "test", "-count=1", "-run=Memory", "./e2e/")
		goCmd(t, root, env386, "test", "-count=1", "-run=Memory", "./runtime/")
		return
	}
	// Some sandboxes (gVisor among them) run no 32-bit binaries: the
	// packages are then at least compiled and vetted for 386.
	t.Log("this host cannot execute GOARCH=386 binaries; the 386 memory tests are compiled and vetted, not run")
	goCmd(t, mod, env386, "vet", "./e2e/")
	goCmd(t, mod, env386, "test", "-c", "-o", filepath.Join(t.TempDir(), "e2e386.test"), "./e2e/")
	goCmd(t, root, env386, "vet", "./runtime/")
}

// TestE2EBenchmarks runs the benchmarks of the generated code with
// -e2e.bench, and logs them.
func TestE2EBenchmarks(t *testing.T) {
	if !*bench {
		return
	}
	e2e.once.Do(func() { e2e.dir, e2e.bin, e2e.err = buildE2E() })
	if e2e.err != nil {
		t.Fatal(e2e.err)
	}
	cmd := exec.Command(e2e.bin, "-test.run=^$", "-test.bench=.", "-test.benchmem")
	cmd.Dir = e2e.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchmarks: %v\n%s", err, out)
	}
	t.Logf("benchmarks of the generated code:\n%s", out)
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
