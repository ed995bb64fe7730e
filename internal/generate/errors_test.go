package generate

import (
	"go/token"
	"path/filepath"
	"testing"
)

func TestDiagnosticFormat(t *testing.T) {
	dir := filepath.FromSlash("/src/app")
	file := filepath.Join(dir, "pkg", "a.go")
	cases := []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{Pos: token.Position{Filename: file, Line: 3, Column: 4}, Msg: "bad"},
			filepath.Join("pkg", "a.go") + ":3:4: bad"},
		{Diagnostic{Pos: token.Position{Filename: file, Line: 3, Column: 4}, Msg: "dup of " + file + ":2:1", Warning: true},
			filepath.Join("pkg", "a.go") + ":3:4: warning: dup of " + filepath.Join("pkg", "a.go") + ":2:1"},
		{Diagnostic{Pos: token.Position{Filename: filepath.FromSlash("/elsewhere/b.go"), Line: 1, Column: 1}, Msg: "x"},
			filepath.FromSlash("/elsewhere/b.go") + ":1:1: x"},
		{Diagnostic{Msg: "no position"}, "ratelimitgen: no position"},
	}
	for _, c := range cases {
		if got := c.d.Format(dir); got != c.want {
			t.Errorf("Format = %q, want %q", got, c.want)
		}
	}
}

func TestParsePosition(t *testing.T) {
	cases := map[string]token.Position{
		"/a/b.go:3:4": {Filename: "/a/b.go", Line: 3, Column: 4},
		"/a/b.go:3":   {Filename: "/a/b.go", Line: 3},
		"/a/b.go":     {Filename: "/a/b.go"},
		"":            {},
		"C:/x.go:1:2": {Filename: "C:/x.go", Line: 1, Column: 2},
	}
	for in, want := range cases {
		if got := parsePosition(in); got != want {
			t.Errorf("parsePosition(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestSortDiagnosticsDeduplicates(t *testing.T) {
	a := Diagnostic{Pos: token.Position{Filename: "a.go", Line: 2, Column: 1}, Msg: "x"}
	b := Diagnostic{Pos: token.Position{Filename: "a.go", Line: 1, Column: 9}, Msg: "y"}
	got := sortDiagnostics(ErrorList{a, b, a})
	if len(got) != 2 || got[0] != b || got[1] != a {
		t.Errorf("sortDiagnostics = %v", got)
	}
}

func TestClosest(t *testing.T) {
	if s, ok := closest("emial", []string{"ctx", "email"}); !ok || s != "email" {
		t.Errorf("closest(emial) = %q, %v", s, ok)
	}
	if _, ok := closest("tenant", []string{"ctx", "email"}); ok {
		t.Error("closest suggested an unrelated name")
	}
}
