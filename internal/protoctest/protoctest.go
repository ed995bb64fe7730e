// Package protoctest runs the real protoc and its plugins in tests: protoc
// from PATH with the well-known types' .proto files it finds beside it
// (Debian's protobuf-compiler and libprotobuf-dev, which `make test`
// installs), the
// plugins built from the Go modules that the calling module requires, so
// that a test generates with the very versions a user of that module gets.
package protoctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// installHint tells a person how to get protoc and the well-known types.
const installHint = "these tests run the real protoc, which must find the well-known types' .proto files. Install both with: " +
	"sudo apt-get install -y protobuf-compiler libprotobuf-dev (Debian/Ubuntu; `make test` does it as root) or brew install protobuf (macOS)"

// Protoc returns the path of protoc, failing t with install instructions
// when it is missing or cannot import the well-known types, which
// limit.proto does (google/protobuf/descriptor.proto): without them every
// run would fail with an error that does not say what to install.
func Protoc(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("protoc")
	if err != nil {
		t.Fatalf("protoc not found in PATH: %s", installHint)
	}
	dir := t.TempDir()
	probe := "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\n"
	if err := os.WriteFile(filepath.Join(dir, "wkt.proto"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "-I", dir, "--descriptor_set_out="+os.DevNull, "wkt.proto")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import google/protobuf/descriptor.proto (%v: %s): %s", path, err, strings.TrimSpace(string(out)), installHint)
	}
	return path
}

// Plugins builds each package, the import path of a main package of the
// calling module or of a module it requires
// (google.golang.org/protobuf/cmd/protoc-gen-go), and returns protoc's
// --plugin flags for them.
func Plugins(t testing.TB, pkgs ...string) []string {
	t.Helper()
	dir := PluginDir(t, pkgs...)
	var flags []string
	for _, p := range pkgs {
		name := filepath.Base(p)
		flags = append(flags, "--plugin="+name+"="+filepath.Join(dir, name))
	}
	return flags
}

// PluginDir builds each package as Plugins does into one temporary
// directory, and returns it, for a PATH that buf finds them in.
func PluginDir(t testing.TB, pkgs ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)
	cmd := exec.Command("go", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// Buf returns the path of buf, failing t with install instructions when it
// is missing.
func Buf(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("buf")
	if err != nil {
		t.Fatalf("buf not found in PATH: these tests run the real buf. Install it with: " +
			"npm install -g @bufbuild/buf@1.75.0 (`make test` does it as root), or see buf.build/docs/installation")
	}
	return path
}

// Run runs protoc with args in dir and returns what it printed and its
// error, a non-nil *exec.ExitError when protoc or a plugin failed.
func Run(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Protoc(t), args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}
