package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snippetSections are the sections about the generator whose Go code
// blocks the test compiles: the README's Quick start, and the pages of
// docs/ the reference moved to. A file listed with no section contributes
// every section.
var snippetSections = []struct {
	file     string
	sections []string
}{
	{"README.md", []string{"Quick start"}},
	{filepath.Join("docs", "directives.md"), nil},
	{filepath.Join("docs", "runtime.md"), []string{"Wiring"}},
}

// readmeSnippets returns the Go code blocks of the README's and docs/'
// sections about the generator (snippetSections), in order.
func readmeSnippets(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range snippetSections {
		b, err := os.ReadFile(filepath.Join("..", "..", f.file))
		if err != nil {
			t.Fatal(err)
		}
		section := ""
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if h, ok := strings.CutPrefix(lines[i], "## "); ok {
				section = h
				continue
			}
			if lines[i] != "```go" || (f.sections != nil && !slices.Contains(f.sections, section)) {
				continue
			}
			var block []string
			for i++; i < len(lines) && lines[i] != "```"; i++ {
				block = append(block, lines[i])
			}
			out = append(out, strings.Join(block, "\n")+"\n")
		}
	}
	return out
}

// TestReadmeSnippetsCompile follows the README word for word in a new
// module: go get -tool, the Quick start's file as package notify, go
// generate, go mod tidy. It then compiles every other snippet of the
// generator's sections, in the README and docs/, in the context they give it: a
// snippet with a package clause is that package, generated; a block of
// directives and a method is an interface of a package of its own, a
// directive on a type is a package of its own with the TenantOf it uses, a func
// is a declaration and anything else is statements, both in a main
// package that has the Quick start's names (ctx, req, realNotifier,
// redisClient) at hand.
func TestReadmeSnippetsCompile(t *testing.T) {
	snippets := readmeSnippets(t)
	if len(snippets) < 4 {
		t.Fatalf("found %d Go snippets in the generator sections of the README and docs/; want the Quick start's, the usage, the several-limits and the wiring ones", len(snippets))
	}
	dir, env := installModule(t)
	var decls, stmts []string
	for i, s := range snippets {
		switch {
		case strings.HasPrefix(s, "package notify\n"):
			writeIn(t, dir, "notify/notify.go", s)
		case strings.HasPrefix(s, "package "):
			pkg, _, _ := strings.Cut(strings.TrimPrefix(s, "package "), "\n")
			writeIn(t, dir, pkg+"/"+pkg+".go", s+"\n//go:generate go tool ratelimitgen\n")
		case strings.HasPrefix(s, "//ratelimit:") && strings.Contains(s, "\ntype "):
			pkg := "types" + string(rune('a'+i))
			writeIn(t, dir, pkg+"/"+pkg+".go", "package "+pkg+"\n\n//go:generate go tool ratelimitgen\n\nimport \"context\"\n\n"+
				"func TenantOf(ctx context.Context) string { return \"\" }\n\n"+s)
		case strings.HasPrefix(s, "//ratelimit:"):
			pkg := "methods" + string(rune('a'+i))
			writeIn(t, dir, pkg+"/"+pkg+".go", "package "+pkg+"\n\n//go:generate go tool ratelimitgen\n\nimport \"context\"\n\n"+
				"type SendCodeRequest struct{ Email, ClientIP string }\n\ntype Notifier interface {\n"+s+"}\n")
		case strings.HasPrefix(s, "func "):
			decls = append(decls, s)
		default:
			stmts = append(stmts, s)
		}
	}
	writeIn(t, dir, "app/app.go", `package main

import (
	"context"

	"github.com/redis/go-redis/v9"

	"example.com/notify/notify"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

func main() {}

// The snippets may use either package.
var (
	_ runtime.Limiter = (*redislimit.Limiter)(nil)
)

`+strings.Join(decls, "\n")+`
func usage(ctx context.Context, realNotifier notify.Notifier, redisClient *redis.Client, req notify.SendCodeRequest) error {
`+strings.Join(stmts, "")+`	return err
}
`)
	goIn(t, dir, env, "generate", "./...")
	goIn(t, dir, env, "mod", "tidy")
	goIn(t, dir, env, "vet", "./...")
}

func writeIn(t *testing.T, dir, rel, content string) {
	t.Helper()
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, path, content)
}
