package generate

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// directive is one //ratelimit: comment as found in a file.
type directive struct {
	comment *ast.Comment
	pos     token.Position
	parsed  *parse.Directive
	errs    []*parse.Error
	file    *ast.File
}

// annotated is a method whose doc comment holds directives or, with fn
// nil, a type whose doc comment holds type-level directives.
type annotated struct {
	fn *types.Func
	// owner is the interface or concrete type the method is declared on.
	owner *types.TypeName
	iface bool
	// namePos is the position of the method's name.
	namePos    token.Position
	directives []*directive
	// exempt is the position of the method's //ratelimit:exempt, by
	// which it opts out of its type's type-level limits, if it has one.
	exempt *token.Position
}

// siteKind says what a comment group documents.
type siteKind int

const (
	siteOther siteKind = iota
	siteMethod
	siteType // an interface or struct type: a type-level directive
)

// site is what a comment group documents: a method, where a directive
// belongs, or something else, described for the error message.
type site struct {
	kind siteKind
	// problem completes "//ratelimit: ..." for a misplaced directive.
	problem string
	fn      *types.Func
	owner   *types.TypeName
	iface   bool
	name    *ast.Ident
}

// scanFile finds the directives of one file and the methods they belong to.
// Misplaced directives and near-misses are reported to ds. It returns the
// annotated methods in source order.
func scanFile(fset *token.FileSet, info *types.Info, file *ast.File, ds *diagnostics) []*annotated {
	sites := fileSites(info, file)
	var out []*annotated
	byFunc := map[*types.Func]*annotated{}
	byType := map[*types.TypeName]*annotated{}
	for _, group := range file.Comments {
		for _, c := range group.List {
			pos := fset.Position(c.Slash)
			d, errs := parse.Line(c.Text, pos)
			if d == nil && len(errs) == 0 {
				if w := parse.NearMiss(c.Text, pos); w != nil {
					ds.nearMiss(w.Pos, w.Msg)
				}
				continue
			}
			dir := &directive{comment: c, pos: pos, parsed: d, errs: errs, file: file}
			s, ok := sites[group]
			if !ok {
				ds.errorf(pos, "//ratelimit: is not in the doc comment of a method: put it on the lines directly above an interface method or a method declaration, with no blank line in between")
				continue
			}
			switch {
			case s.kind == siteOther:
				ds.errorf(pos, "//ratelimit: %s", s.problem)
				continue
			case s.kind == siteType && d != nil && d.Exempt:
				ds.errorf(pos, "//ratelimit:exempt belongs on a method, to opt it out of its type's type-level limits, not on type %s", s.owner.Name())
				continue
			case s.kind == siteType:
				a := byType[s.owner]
				if a == nil {
					a = &annotated{owner: s.owner, iface: s.iface, namePos: fset.Position(s.name.Pos())}
					byType[s.owner] = a
					out = append(out, a)
				}
				a.directives = append(a.directives, dir)
				continue
			}
			a := byFunc[s.fn]
			if a == nil {
				a = &annotated{fn: s.fn, owner: s.owner, iface: s.iface, namePos: fset.Position(s.name.Pos())}
				byFunc[s.fn] = a
				out = append(out, a)
			}
			if d != nil && d.Exempt {
				a.exempt = &dir.pos
				continue
			}
			a.directives = append(a.directives, dir)
		}
	}
	return out
}

// fileSites maps each comment group of file that documents something (or
// trails a declaration) to what it documents.
func fileSites(info *types.Info, file *ast.File) map[*ast.CommentGroup]site {
	sites := map[*ast.CommentGroup]site{}
	other := func(g *ast.CommentGroup, format string, args ...any) {
		if g != nil {
			sites[g] = site{problem: fmt.Sprintf(format, args...)}
		}
	}
	if file.Doc != nil {
		other(file.Doc, "is on the package clause: put it on a method")
	}

	// First describe everything that can carry a comment, wherever it is;
	// the package-level declarations below then claim the method docs.
	named := map[*ast.InterfaceType]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if it, ok := ts.Type.(*ast.InterfaceType); ok {
				named[it] = ts.Name.Name
			}
		}
		return true
	})
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv == nil {
				other(n.Doc, "is on function %s, which is not a method: put it on a method (a func with a receiver) or an interface method", n.Name.Name)
			}
		case *ast.GenDecl:
			other(n.Doc, "is on %s: put it on a method", describeGenDecl(n))
		case *ast.TypeSpec:
			other(n.Doc, "is on type %s: put it on one of its methods", n.Name.Name)
			other(n.Comment, "is on type %s: put it on one of its methods", n.Name.Name)
		case *ast.ValueSpec:
			other(n.Doc, "is on %s: put it on a method", identList(n.Names))
			other(n.Comment, "is on %s: put it on a method", identList(n.Names))
		case *ast.ImportSpec:
			other(n.Doc, "is on an import: put it on a method")
			other(n.Comment, "is on an import: put it on a method")
		case *ast.StructType:
			for _, f := range n.Fields.List {
				what := "an embedded field"
				if len(f.Names) > 0 {
					what = "field " + identList(f.Names)
				}
				other(f.Doc, "is on struct %s: put it on a method", what)
				other(f.Comment, "is on struct %s: put it on a method", what)
			}
		case *ast.InterfaceType:
			for _, f := range n.Methods.List {
				if len(f.Names) == 0 {
					other(f.Doc, "is on an embedded interface or type constraint: put it on the method in the embedded interface's own declaration")
					other(f.Comment, "is on an embedded interface or type constraint: put it on the method in the embedded interface's own declaration")
					continue
				}
				if name, ok := named[n]; ok {
					// Package-level interfaces claim their methods below;
					// this one is declared inside a function.
					other(f.Doc, "is on method %s of %s, a type declared inside a function: ratelimitgen wraps package-level types only", f.Names[0].Name, name)
				} else {
					other(f.Doc, "is on method %s of an interface literal: ratelimitgen wraps named types only; declare a named interface type (type X interface{ ... })", f.Names[0].Name)
				}
				other(f.Comment, "follows method %s instead of preceding it: move it to the doc comment above the method", f.Names[0].Name)
			}
		}
		return true
	})

	for _, decl := range file.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil || decl.Doc == nil {
				continue
			}
			fn, _ := info.Defs[decl.Name].(*types.Func)
			if fn == nil {
				continue // a type error, reported with the package's errors
			}
			owner := receiverTypeName(fn)
			if owner == nil {
				continue
			}
			sites[decl.Doc] = site{kind: siteMethod, fn: fn, owner: owner, name: decl.Name}
		case *ast.GenDecl:
			if decl.Tok != token.TYPE {
				continue
			}
			for _, spec := range decl.Specs {
				ts := spec.(*ast.TypeSpec)
				owner, _ := info.Defs[ts.Name].(*types.TypeName)
				switch ts.Type.(type) {
				case *ast.InterfaceType, *ast.StructType:
					if owner != nil && !ts.Assign.IsValid() {
						_, isIface := ts.Type.(*ast.InterfaceType)
						typeSite := site{kind: siteType, owner: owner, iface: isIface, name: ts.Name}
						if ts.Doc != nil {
							sites[ts.Doc] = typeSite
						}
						if decl.Doc != nil && !decl.Lparen.IsValid() {
							sites[decl.Doc] = typeSite
						}
					}
				}
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok {
					continue
				}
				for _, f := range it.Methods.List {
					if len(f.Names) == 0 || f.Doc == nil {
						continue
					}
					if ts.Assign.IsValid() {
						other(f.Doc, "is on method %s of type alias %s: declare %s as a defined type (type %s interface{ ... }) to have it wrapped", f.Names[0].Name, ts.Name.Name, ts.Name.Name, ts.Name.Name)
						continue
					}
					fn, _ := info.Defs[f.Names[0]].(*types.Func)
					if fn == nil || owner == nil {
						continue
					}
					sites[f.Doc] = site{kind: siteMethod, fn: fn, owner: owner, iface: true, name: f.Names[0]}
				}
			}
		}
	}
	return sites
}

// receiverTypeName returns the named type whose method fn is.
func receiverTypeName(fn *types.Func) *types.TypeName {
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil {
		return nil
	}
	t := types.Unalias(sig.Recv().Type())
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj()
	}
	return nil
}

// describeGenDecl names what a var, const, type or import declaration
// declares, for messages.
func describeGenDecl(d *ast.GenDecl) string {
	if len(d.Specs) == 1 {
		switch spec := d.Specs[0].(type) {
		case *ast.TypeSpec:
			return "type " + spec.Name.Name
		case *ast.ValueSpec:
			return d.Tok.String() + " " + identList(spec.Names)
		}
	}
	return "a " + d.Tok.String() + " declaration"
}

func identList(ids []*ast.Ident) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.Name
	}
	return strings.Join(s, ", ")
}
