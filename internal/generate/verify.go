package generate

import (
	"context"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Verify checks the generated code on disk against the directives, by a
// route of its own: it shares nothing with how Generate finds limits, so
// that a bug there cannot hide here. For each wrapper of the packages
// matching patterns, every method of the wrapped type's method set whose
// declaration carries a directive (in any package, through any chain of
// embedding), or whose declaring type or the wrapped type itself carries a
// type-level directive, must be declared on the wrapper and pass those
// limits, by name, window (or calendar window) and max, to runtime.Enforce,
// runtime.Wait, runtime.Admit or runtime.AdmitWait (see admitCalls).
//
// The generated files must be up to date (see Stale): Verify reads them as
// the build does. It returns an ErrorList of the methods that fail, or
// another error if the packages cannot be loaded.
func Verify(ctx context.Context, cfg Config, patterns ...string) error {
	var errs ErrorList
	for _, r := range byModule(cfg.Dir, patterns) {
		rcfg := cfg
		rcfg.Dir = r.dir
		el, err := verifyModule(ctx, rcfg, r.patterns)
		if err != nil {
			return err
		}
		errs = append(errs, el...)
	}
	if len(errs) > 0 {
		return sortDiagnostics(errs)
	}
	return nil
}

func verifyModule(ctx context.Context, cfg Config, patterns []string) (ErrorList, error) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	// Built as a user's build does: the generated files take part.
	built := packagesConfig(ctx, cfg)
	built.BuildFlags = nil
	if tags := userTags(cfg); len(tags) > 0 {
		built.BuildFlags = []string{"-tags=" + strings.Join(tags, ",")}
	}
	pkgs, err := packages.Load(built, patterns...)
	if err != nil {
		return nil, fmt.Errorf("loading %v: %w", patterns, err)
	}
	v := &verifier{cfg: packagesConfig(ctx, cfg), decls: map[string]*declPackage{}}
	for _, pkg := range pkgs {
		for _, w := range generatedWrappers(pkg) {
			v.check(pkg, w)
		}
	}
	if v.err != nil {
		return nil, v.err
	}
	return v.errs, nil
}

// generatedWrapper is a wrapper type as the generated code declares it.
type generatedWrapper struct {
	name    *types.TypeName
	wrapped types.Type // the embedded field's or next's type
	file    *ast.File
}

// generatedWrappers returns the wrapper types that pkg's generated files
// declare: the structs with a runtime.Limiter field.
func generatedWrappers(pkg *packages.Package) []generatedWrapper {
	var out []generatedWrapper
	for _, file := range pkg.Syntax {
		if len(file.Comments) == 0 || file.Comments[0].List[0].Text != Header {
			continue
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				tn, ok := pkg.TypesInfo.Defs[spec.(*ast.TypeSpec).Name].(*types.TypeName)
				if !ok {
					continue
				}
				st, ok := tn.Type().Underlying().(*types.Struct)
				if !ok {
					continue
				}
				w := generatedWrapper{name: tn, file: file}
				limiter := false
				for i := 0; i < st.NumFields(); i++ {
					f := st.Field(i)
					switch {
					case isRuntimeLimiter(f.Type()):
						limiter = true
					case f.Embedded() || f.Name() == "next":
						w.wrapped = f.Type()
					}
				}
				if limiter && w.wrapped != nil {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

func isRuntimeLimiter(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "Limiter" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == runtimePath
}

// runtimePath is the import path of the package the generated code calls.
const runtimePath = "github.com/ratelimitgen/ratelimitgen/runtime"

// wantLimit is a limit a method must be called within, as its directive
// says.
type wantLimit struct {
	name   string
	window time.Duration
	// calendar is the calendar window, or the zero value.
	calendar runtime.Calendar
	max      int // 0 when max= is an expression
	pos      token.Position
}

// verifier checks wrappers, reading the directives of each declaring
// package from source once.
type verifier struct {
	cfg   *packages.Config
	decls map[string]*declPackage
	errs  ErrorList
	err   error
}

// declPackage is a package that declares methods of wrapped types, as its
// source says.
type declPackage struct {
	pkg *packages.Package
	// docs holds the doc comment of each method and type, by the position
	// of its name.
	docs map[token.Pos]*ast.CommentGroup
}

func (v *verifier) check(pkg *packages.Package, w generatedWrapper) {
	named, _ := types.Unalias(w.wrapped).(*types.Named)
	if ptr, ok := types.Unalias(w.wrapped).(*types.Pointer); ok {
		named, _ = types.Unalias(ptr.Elem()).(*types.Named)
	}
	pos := pkg.Fset.Position(w.name.Pos())
	if named == nil {
		v.errs = append(v.errs, Diagnostic{Pos: pos, Msg: fmt.Sprintf("cannot tell what %s wraps", w.name.Name())})
		return
	}
	var ms *types.MethodSet
	if types.IsInterface(named) {
		ms = types.NewMethodSet(named)
	} else {
		ms = types.NewMethodSet(types.NewPointer(named))
	}
	own := v.typeLevel(named.Origin().Obj())
	for i := 0; i < ms.Len(); i++ {
		fn := ms.At(i).Obj().(*types.Func)
		want := v.limitsOf(fn, own, receiverTypeName(fn.Origin()) == named.Origin().Obj())
		if v.err != nil || len(want) == 0 {
			continue
		}
		v.checkMethod(pkg, w, fn.Name(), want)
	}
}

// limitsOf returns the limits that method fn of a wrapped type must be
// called within: its own directives', its declaring type's type-level
// ones unless it is exempt, and own, the wrapped type's type-level ones,
// unless fn is the wrapped type's own method and exempt.
func (v *verifier) limitsOf(fn *types.Func, own []wantLimit, ownMethod bool) []wantLimit {
	fn = fn.Origin()
	owner := receiverTypeName(fn)
	if owner == nil || fn.Pkg() == nil {
		return nil
	}
	d := v.declPackage(fn.Pkg().Path())
	if d == nil {
		return nil
	}
	var doc *ast.CommentGroup
	if tn, ok := d.pkg.Types.Scope().Lookup(owner.Name()).(*types.TypeName); ok {
		if obj, _, _ := types.LookupFieldOrMethod(tn.Type(), true, d.pkg.Types, fn.Name()); obj != nil {
			doc = d.docs[obj.Pos()]
		}
	}
	lines, exempt := directiveLines(doc)
	var out []wantLimit
	if !exempt {
		out = append(out, v.typeLevel(owner)...)
	}
	if !ownMethod {
		// Exempt opts out of the declaring type's limits only.
		out = append(out, own...)
	}
	for i, c := range lines {
		out = append(out, wantOf(d.pkg, c, i, owner.Name()+"."+fn.Name()))
	}
	return out
}

// typeLevel returns the type-level limits of tn.
func (v *verifier) typeLevel(tn *types.TypeName) []wantLimit {
	if tn == nil || tn.Pkg() == nil {
		return nil
	}
	d := v.declPackage(tn.Pkg().Path())
	if d == nil {
		return nil
	}
	src, ok := d.pkg.Types.Scope().Lookup(tn.Name()).(*types.TypeName)
	if !ok {
		return nil
	}
	lines, _ := directiveLines(d.docs[src.Pos()])
	var out []wantLimit
	for i, c := range lines {
		out = append(out, wantOf(d.pkg, c, i, tn.Name()))
	}
	return out
}

// directiveLines returns the directives of doc, and whether it holds
// //ratelimit:exempt.
func directiveLines(doc *ast.CommentGroup) (lines []*ast.Comment, exempt bool) {
	if doc == nil {
		return nil, false
	}
	for _, c := range doc.List {
		if c.Text == parse.Prefix+parse.Exempt {
			exempt = true
		} else if strings.HasPrefix(c.Text, parse.Prefix) {
			lines = append(lines, c)
		}
	}
	return lines, exempt
}

// wantOf is the limit of the i-th directive c of what is called name
// (Type.Method or Type) in pkg.
func wantOf(pkg *packages.Package, c *ast.Comment, i int, name string) wantLimit {
	pos := pkg.Fset.Position(c.Slash)
	d, _ := parse.Line(c.Text, pos)
	w := wantLimit{pos: pos}
	if d == nil {
		return w
	}
	w.name, w.window, w.calendar, w.max = d.Name, d.Window, d.Calendar, d.Max
	if w.name == "" && i == 0 {
		w.name = pkg.PkgPath + "." + name
	}
	return w
}

// declPackage loads the package at path from source, once.
func (v *verifier) declPackage(path string) *declPackage {
	if d, done := v.decls[path]; done {
		return d
	}
	v.decls[path] = nil
	pkgs, err := packages.Load(v.cfg, path)
	if err != nil {
		v.err = err
		return nil
	}
	if len(pkgs) != 1 || pkgs[0].Types == nil {
		return nil
	}
	d := &declPackage{pkg: pkgs[0], docs: map[token.Pos]*ast.CommentGroup{}}
	for _, file := range d.pkg.Syntax {
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				d.docs[n.Name.Pos()] = n.Doc
			case *ast.GenDecl:
				if n.Tok == token.TYPE {
					for _, s := range n.Specs {
						ts := s.(*ast.TypeSpec)
						doc := ts.Doc
						if doc == nil && len(n.Specs) == 1 {
							doc = n.Doc
						}
						d.docs[ts.Name.Pos()] = doc
					}
				}
			case *ast.InterfaceType:
				for _, f := range n.Methods.List {
					if len(f.Names) > 0 {
						d.docs[f.Names[0].Pos()] = f.Doc
					}
				}
			}
			return true
		})
	}
	v.decls[path] = d
	return d
}

// checkMethod checks that w declares the method name and that its body
// passes every limit of want to one of the admitCalls.
func (v *verifier) checkMethod(pkg *packages.Package, w generatedWrapper, name string, want []wantLimit) {
	pos := pkg.Fset.Position(w.name.Pos())
	var decl *ast.FuncDecl
	for _, file := range pkg.Syntax {
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name && fd.Recv != nil && pkg.TypesInfo.Defs[fd.Name] != nil {
				if recv := receiverTypeName(pkg.TypesInfo.Defs[fd.Name].(*types.Func)); recv == w.name {
					decl = fd
				}
			}
		}
	}
	if decl == nil {
		v.errs = append(v.errs, Diagnostic{Pos: pos, Msg: fmt.Sprintf("%s does not override %s, which the directive at %s limits: the method is promoted unlimited", w.name.Name(), name, want[0].pos)})
		return
	}
	got := enforcedLimits(pkg, decl)
	for _, l := range want {
		g, ok := got[l.name]
		switch {
		case !ok:
			v.errs = append(v.errs, Diagnostic{Pos: pkg.Fset.Position(decl.Name.Pos()), Msg: fmt.Sprintf("%s.%s does not enforce the limit %q of the directive at %s", w.name.Name(), name, l.name, l.pos)})
		case g.window != l.window || g.calendar != l.calendar || l.max > 0 && g.max != l.max:
			v.errs = append(v.errs, Diagnostic{Pos: pkg.Fset.Position(decl.Name.Pos()), Msg: fmt.Sprintf("%s.%s enforces %q with window %s and max %d; the directive at %s says window %s and max %d", w.name.Name(), name, l.name, limitWindow(g.window, g.calendar), g.max, l.pos, limitWindow(l.window, l.calendar), l.max)})
		}
	}
}

// admitCalls are the functions of the runtime package that admit a call
// of a generated method: its limits are the requests passed to them.
var admitCalls = map[string]bool{"Enforce": true, "Wait": true, "Admit": true, "AdmitWait": true}

// enforcedLimits returns, by name, the runtime.Limit variables of the
// requests that decl passes to one of the admitCalls (directly, or in a
// slice of requests it builds first).
func enforcedLimits(pkg *packages.Package, decl *ast.FuncDecl) map[string]wantLimit {
	calls := false
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if fn, ok := typeutilCallee(pkg.TypesInfo, call).(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == runtimePath && admitCalls[fn.Name()] {
				calls = true
			}
		}
		return true
	})
	out := map[string]wantLimit{}
	if !calls {
		return out
	}
	// A limit whose max each call computes is a local copy of the
	// package-level one (limit := limitT; limit.Max = ...).
	copies := map[types.Object]*ast.Ident{}
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && as.Tok == token.DEFINE && len(as.Lhs) == len(as.Rhs) {
			for i, lhs := range as.Lhs {
				if id, ok := as.Rhs[i].(*ast.Ident); ok {
					if obj := pkg.TypesInfo.Defs[lhs.(*ast.Ident)]; obj != nil {
						copies[obj] = id
					}
				}
			}
		}
		return true
	})
	ast.Inspect(decl.Body, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Limit" {
			return true
		}
		id, ok := kv.Value.(*ast.Ident)
		if !ok {
			return true
		}
		if orig, ok := copies[pkg.TypesInfo.Uses[id]]; ok {
			id = orig
		}
		if obj, ok := pkg.TypesInfo.Uses[id].(*types.Var); ok {
			if l, ok := limitValue(pkg, obj); ok {
				out[l.name] = l
			}
		}
		return true
	})
	return out
}

// limitValue evaluates the runtime.Limit literal that initializes the
// package-level variable obj.
func limitValue(pkg *packages.Package, obj *types.Var) (wantLimit, bool) {
	for _, file := range pkg.Syntax {
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if pkg.TypesInfo.Defs[n] != obj || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.CompositeLit)
					if !ok {
						return wantLimit{}, false
					}
					var l wantLimit
					for _, e := range lit.Elts {
						kv, ok := e.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						val := pkg.TypesInfo.Types[kv.Value].Value
						if val == nil {
							continue
						}
						switch kv.Key.(*ast.Ident).Name {
						case "Name":
							l.name = constant.StringVal(val)
						case "Window":
							n, _ := constant.Int64Val(val)
							l.window = time.Duration(n)
						case "Max":
							n, _ := constant.Int64Val(val)
							l.max = int(n)
						}
					}
					for _, e := range lit.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok && kv.Key.(*ast.Ident).Name == "Calendar" {
							l.calendar = calendarValue(pkg, kv.Value)
						}
					}
					return l, true
				}
			}
		}
	}
	return wantLimit{}, false
}

// calendarValue evaluates x, a runtime.Calendar literal of constant
// fields, as generated code writes it.
func calendarValue(pkg *packages.Package, x ast.Expr) runtime.Calendar {
	var c runtime.Calendar
	lit, ok := x.(*ast.CompositeLit)
	if !ok {
		return c
	}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		val := pkg.TypesInfo.Types[kv.Value].Value
		if !ok || val == nil {
			continue
		}
		switch key.Name {
		case "Period":
			n, _ := constant.Uint64Val(val)
			c.Period = runtime.Period(n)
		case "Zone":
			c.Zone = constant.StringVal(val)
		}
	}
	return c
}

// typeutilCallee returns the function or method that call calls, if it
// is named.
func typeutilCallee(info *types.Info, call *ast.CallExpr) types.Object {
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		return info.Uses[f]
	case *ast.SelectorExpr:
		return info.Uses[f.Sel]
	}
	return nil
}
