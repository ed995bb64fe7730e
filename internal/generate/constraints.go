package generate

import (
	"go/ast"
	"go/build/constraint"
	"path/filepath"
	"slices"
	"strings"
)

// A wrapper of a type declared under a build constraint (a //go:build line,
// or a _linux or _amd64 file name) can only compile where the type does,
// so it goes to a generated file under the same constraint: one file per
// distinct constraint, named after it (ratelimit_gen.linux.go), beside the
// unconstrained one, which holds every limit variable and helper. Those
// compile everywhere, and unused package-level declarations are legal.

// knownOS and knownArch are the GOOS and GOARCH values that a file name
// suffix implies a constraint for, as go/build's lists.
var (
	knownOS = setOf("aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux",
		"nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos")
	knownArch = setOf("386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips", "mipsle",
		"mips64", "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv", "riscv64", "s390",
		"s390x", "sparc", "sparc64", "wasm")
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// fileConstraint returns the build constraint of a source file: its
// //go:build line and what its name implies, or nil when it has none.
func fileConstraint(file *ast.File, path string) constraint.Expr {
	var exprs []constraint.Expr
	for _, g := range file.Comments {
		if g.Pos() >= file.Package {
			break
		}
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				if x, err := constraint.Parse(c.Text); err == nil {
					exprs = append(exprs, x)
				}
			}
		}
	}
	// As go/build reads a name: up to the first dot, from the first
	// underscore, without _test; then _GOOS_GOARCH, _GOOS or _GOARCH.
	name, _, _ := strings.Cut(filepath.Base(path), ".")
	if i := strings.IndexByte(name, '_'); i >= 0 {
		l := strings.Split(name[i:], "_")
		if n := len(l); n > 0 && l[n-1] == "test" {
			l = l[:n-1]
		}
		switch n := len(l); {
		case n >= 2 && knownOS[l[n-2]] && knownArch[l[n-1]]:
			exprs = append(exprs, &constraint.AndExpr{X: &constraint.TagExpr{Tag: l[n-2]}, Y: &constraint.TagExpr{Tag: l[n-1]}})
		case n >= 1 && (knownOS[l[n-1]] || knownArch[l[n-1]]):
			exprs = append(exprs, &constraint.TagExpr{Tag: l[n-1]})
		}
	}
	return andAll(exprs)
}

// andAll is the conjunction of exprs, without repeats, in a stable order so
// that equal constraints spell alike; nil if there is none.
func andAll(exprs []constraint.Expr) constraint.Expr {
	seen := map[string]constraint.Expr{}
	var keys []string
	for _, x := range exprs {
		if x == nil {
			continue
		}
		s := x.String()
		if _, ok := seen[s]; !ok {
			seen[s] = x
			keys = append(keys, s)
		}
	}
	slices.Sort(keys)
	var out constraint.Expr
	for _, k := range keys {
		if out == nil {
			out = seen[k]
		} else {
			out = &constraint.AndExpr{X: out, Y: seen[k]}
		}
	}
	return out
}

// constrainedName is the generated file for wrappers under constraint c:
// output with the constraint spelt in words before .go, after a dot, so
// that the name implies no constraint of its own (go/build reads a name
// only up to its first dot).
func constrainedName(output string, c constraint.Expr) string {
	s := c.String()
	s = strings.NewReplacer("&&", " and ", "||", " or ", "!", " not ", "(", " ", ")", " ").Replace(s)
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !(r == '_' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	return strings.TrimSuffix(output, ".go") + "." + strings.ReplaceAll(strings.Join(words, "_"), ".", "_") + ".go"
}

// buildLine is the //go:build line of a generated file under constraint c
// (nil for none): never with the generator's own tag, and only where c
// holds.
func buildLine(c constraint.Expr) string {
	var x constraint.Expr = &constraint.NotExpr{X: &constraint.TagExpr{Tag: BuildTag}}
	if c != nil {
		x = &constraint.AndExpr{X: x, Y: c}
	}
	return "//go:build " + x.String()
}
