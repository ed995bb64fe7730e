package generate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// limitVarRef matches a limit's package-level variable (limitNotifierSendCode),
// which go doc cannot show: doc comments name limits by their Name.
var limitVarRef = regexp.MustCompile(`\blimit[A-Z]\w*`)

// TestGeneratedDocs checks the doc comments of every golden file: a wrapper
// type's takes at most maxTypeDocLines lines, and none names an unexported
// limit variable.
func TestGeneratedDocs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "*", "want", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*", "want", "*", "*.go"))
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.TYPE || d.Doc == nil {
					continue
				}
				if n := len(d.Doc.List); n > maxTypeDocLines {
					t.Errorf("%s: the doc of type %s has %d lines; want at most %d", path, d.Specs[0].(*ast.TypeSpec).Name.Name, n, maxTypeDocLines)
				}
				checkNoLimitVar(t, path, d.Doc)
			case *ast.FuncDecl:
				if d.Doc == nil && d.Name.Name != "_" {
					t.Errorf("%s: %s has no doc comment", path, d.Name.Name)
				}
				if d.Doc != nil {
					checkNoLimitVar(t, path, d.Doc)
				}
			}
		}
	}
}

func checkNoLimitVar(t *testing.T, path string, doc *ast.CommentGroup) {
	t.Helper()
	if m := limitVarRef.FindString(doc.Text()); m != "" {
		t.Errorf("%s: a doc comment names the unexported %s:\n%s", path, m, strings.TrimSpace(doc.Text()))
	}
}
