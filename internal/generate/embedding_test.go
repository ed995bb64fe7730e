package generate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const shopBase = `package base

import "context"

type Store interface {
	//ratelimit:key=id window=1m max=2
	Read(ctx context.Context, id string) error
}

type Auditor struct{ N int }

//ratelimit:key=id window=1m max=2
func (a *Auditor) Audit(ctx context.Context, id string) error { return nil }
`

const shopOuter = `package outer

import (
	"context"

	"shop/base"
)

type Catalog interface {
	base.Store
	//ratelimit:key=sku window=1m max=2
	Lookup(ctx context.Context, sku string) error
}

type Shop struct{ *base.Auditor }

//ratelimit:key=sku window=1m max=2
func (s *Shop) Buy(ctx context.Context, sku string) error { return nil }
`

// newShop writes a module called shop, as go mod init shop makes it,
// whose package outer embeds limited types of package base: the case of
// a user's first go generate ./..., which runs the generator in one
// package at a time.
func newShop(t *testing.T, base string) (mod string, env []string) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, env = newModule(t, repo, "shop")
	for path, src := range map[string]string{"base/base.go": base, "outer/outer.go": shopOuter} {
		if err := os.MkdirAll(filepath.Join(mod, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(mod, path), []byte(src))
	}
	return mod, env
}

// The methods outer's types get from base keep base's limits whether the
// run covers outer alone, as go generate runs it, or both packages, and
// -list shows them; Verify proves the written wrappers enforce them.
func TestEmbeddingOnePackagePerRun(t *testing.T) {
	mod, env := newShop(t, shopBase)
	ctx := context.Background()
	for _, run := range []struct {
		dir      string
		patterns []string
	}{
		{"base", nil}, {"outer", nil}, // go generate ./...
		{".", []string{"./..."}},
	} {
		cfg := Config{Dir: filepath.Join(mod, run.dir), Env: env}
		res, err := Generate(ctx, cfg, run.patterns...)
		if err != nil {
			t.Fatalf("Generate in %s: %v", run.dir, err)
		}
		if err := Write(res.Files); err != nil {
			t.Fatal(err)
		}
		if run.dir == "base" {
			continue
		}
		out, err := os.ReadFile(filepath.Join(mod, "outer", DefaultOutput))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Limit: limitStoreRead, Key: id", "Limit: limitAuditorAudit, Key: id"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("run in %s %v: outer's wrappers lack %q:\n%s", run.dir, run.patterns, want, out)
			}
		}
		if err := Verify(ctx, cfg, run.patterns...); err != nil {
			t.Errorf("Verify after the run in %s %v: %v", run.dir, run.patterns, err)
		}
		man, err := List(ctx, cfg, run.patterns...)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range man.Entries {
			names = append(names, e.Name)
		}
		if got := strings.Join(names, " "); !strings.Contains(got, "shop/base.Store.Read shop/base.Auditor.Audit") {
			t.Errorf("List in %s %v = %s; want base's limits that outer's wrappers keep", run.dir, run.patterns, got)
		}
	}
}

// When base's directive has problems, outer alone cannot keep its limit:
// the embedding types are errors, not wrappers that forward unlimited.
func TestEmbeddingInvalidDirectiveOutsideRun(t *testing.T) {
	mod, env := newShop(t, strings.Replace(shopBase, "key=id window=1m", "key=nosuch window=1m", 1))
	_, err := Generate(context.Background(), Config{Dir: filepath.Join(mod, "outer"), Env: env})
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Generate: got %v, want an ErrorList", err)
	}
	want := "outer.go:9:6: Catalog gets Read from package shop/base, whose //ratelimit: directive at " + filepath.Join(mod, "base", "base.go") + ":6:2 has problems, so no wrapper could keep its limit: run ratelimitgen in shop/base to see them"
	if got := list.Format(filepath.Join(mod, "outer")); got != want {
		t.Errorf("Generate:\n%s\nwant:\n%s", got, want)
	}
}

// Verify catches a wrapper that enforces another limit than the method's,
// and one that leaves a limited method promoted unlimited.
func TestVerifyCatchesUnlimited(t *testing.T) {
	mod, env := newShop(t, shopBase)
	cfg := Config{Dir: mod, Env: env}
	res := generateOK(t, cfg, "./...")
	if err := Write(res.Files); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(mod, "outer", DefaultOutput)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "Limit: limitStoreRead, Key: id", "Limit: limitCatalogLookup, Key: id", 1)
	start := strings.Index(src, "// Audit calls")
	end := strings.Index(src, "// Buy calls")
	if start < 0 || end < start {
		t.Fatalf("no Audit method in:\n%s", src)
	}
	writeFile(t, path, []byte(src[:start]+src[end:]))

	got := verifyErrors(t, cfg, "./...")
	for _, want := range []string{
		`outer/ratelimit_gen.go:62:30: RateLimitedCatalog.Read does not enforce the limit "shop/base.Store.Read" of the directive at base/base.go:6:2`,
		"outer/ratelimit_gen.go:72:6: RateLimitedShop does not override Audit, which the directive at base/base.go:12:1 limits: the method is promoted unlimited",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Verify:\n%s\nlacks %q", got, want)
		}
	}
}

// verifyErrors runs Verify, which must fail with an ErrorList, and
// returns it formatted relative to cfg.Dir.
func verifyErrors(t *testing.T, cfg Config, patterns ...string) string {
	t.Helper()
	err := Verify(context.Background(), cfg, patterns...)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Verify = %v; want an ErrorList", err)
	}
	return list.Format(cfg.Dir)
}
