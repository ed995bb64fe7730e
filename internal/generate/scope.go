package generate

import (
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// checkedExpr is a type-checked expression of a directive (a key part, a
// cost or a max), ready to be spelt in the generated code.
type checkedExpr struct {
	// text is the expression as written.
	text string
	// typ is the expression's type; untyped constants keep their untyped
	// type.
	typ types.Type
	// value is the expression's value when it is a constant, else nil.
	value constant.Value
	// refs are the identifiers that the generated code spells differently
	// from text: parameters (renamed when their name is unusable) and
	// package-qualified names (whose import name is the generated file's),
	// in order.
	refs []exprRef
	// idents holds the identifiers of the expression, except package
	// names, which generated names must not shadow.
	idents []string
	// parens is set when the expression must be parenthesised to call a
	// method on it.
	parens bool
	// plain is set when the expression is a name or a chain of field
	// selections, which costs nothing to evaluate twice.
	plain bool
	// unexported is the first name the expression uses that only its
	// own package may use (a package-level name, field or method), or "":
	// the wrapper of a type that gets the method by embedding in another
	// package cannot spell it.
	unexported string
}

// exprRef is one identifier (or pkg.Name selector) of an expression, at
// text[start:end].
type exprRef struct {
	start, end int
	// param is the index of the parameter the identifier denotes, or -1.
	param int
	// pkg and name denote a package-level object when param is -1: of
	// another package, or of the directive's own, which the wrapper of a
	// type embedding the method in another package must qualify.
	pkg  *types.Package
	name string
	// importName is how the source file names pkg, the preferred import
	// name in the generated file.
	importName string
}

// exprScope is what a directive's expressions may refer to: the method's
// parameters (and type parameters), nested in the scope of the file that
// declares the method.
type exprScope struct {
	fset  *token.FileSet
	pkg   *types.Package
	at    token.Pos // the directive's position, inside scope
	scope *types.Scope
	// params maps the parameter variables of scope to their index.
	params map[*types.Var]int
	// paramNames and recvName are for messages.
	paramNames []string
	recvName   string
	// results names the method's results in an outcome expression's
	// scope (see outcomeScope), for messages; nil elsewhere.
	results []string
	// unnamedParams is set when the method's parameters have no names,
	// as in generated gRPC server interfaces, and blankParams when one is
	// _, which no directive can name.
	unnamedParams, blankParams bool
	// imports finds the packages the file does not import.
	imports *importResolver
}

// newExprScope builds the scope in which the expressions of the directive
// c, on method sig, are checked. go/types evaluates an expression in the
// innermost scope containing a position, so the new scope covers the
// directive comment, where no other scope lies. Its variables are fresh
// copies of the parameters: the real ones are visible only after the
// signature.
func newExprScope(fset *token.FileSet, pkg *types.Package, fileScope *types.Scope, c *ast.Comment, sig *types.Signature, tparams *types.TypeParamList, imports *importResolver) (*exprScope, error) {
	// The directive of a generic interface's method lies in the scope of
	// the type's parameters.
	if fileScope == nil {
		return nil, errors.New("the file was not type-checked")
	}
	parent := fileScope.Innermost(c.Slash)
	if parent == nil {
		return nil, errors.New("the directive lies outside its file's scope")
	}
	es := &exprScope{
		fset:    fset,
		pkg:     pkg,
		at:      c.Slash,
		scope:   types.NewScope(parent, c.Slash, c.End(), "ratelimit directive"),
		params:  map[*types.Var]int{},
		imports: imports,
	}
	if fileScope.Innermost(c.Slash) != es.scope {
		return nil, errors.New("the directive lies inside another scope")
	}
	for i := 0; i < tparams.Len(); i++ {
		tp := tparams.At(i)
		if name := tp.Obj().Name(); name != "_" {
			es.scope.Insert(types.NewTypeName(token.NoPos, pkg, name, tp))
		}
	}
	for i := 0; i < sig.Params().Len(); i++ {
		p := sig.Params().At(i)
		name := p.Name()
		switch name {
		case "_":
			es.blankParams = true
			continue
		case "":
			// As in the generated gRPC interfaces; see unnamedParamName.
			name = unnamedParamName(sig, i)
			es.unnamedParams = true
		}
		v := types.NewParam(token.NoPos, pkg, name, p.Type())
		es.scope.Insert(v)
		es.params[v] = i
		es.paramNames = append(es.paramNames, name)
	}
	if r := sig.Recv(); r != nil && r.Name() != "" && r.Name() != "_" {
		es.recvName = r.Name()
	}
	return es, nil
}

// exprRole says what an expression is for, in messages: "key part",
// "cost" or "max", and an example of a good one.
type exprRole struct {
	what    string
	option  string
	example string
	// integer completes "cost x has type T, but ..." for a role whose
	// expressions must be integers.
	integer string
}

var (
	keyRole  = exprRole{what: "key part", option: "key", example: "key=req.ID"}
	costRole = exprRole{what: "cost", option: "cost", example: "cost=len(req.Items)", integer: "a cost must be an integer: the number of units the call uses, e.g. cost=len(req.Items)"}
	maxRole  = exprRole{what: "max", option: "max", example: "max=planLimit(ctx)", integer: "max must be an integer: the admissions allowed within a window, e.g. max=planLimit(ctx)"}
)

// check parses and type-checks one expression, which must be a single
// value. It reports problems to ds and returns nil if there are any; the
// returned ast.Expr is for callers that look further at its type.
func (es *exprScope) check(e parse.Expr, role exprRole, ds *diagnostics) (*checkedExpr, ast.Expr) {
	expr, err := parser.ParseExprFrom(es.fset, e.Pos.Filename+"#expr", e.Text, parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			ds.errorf(shift(e.Pos, list[0].Pos.Offset), "%s %q is not a Go expression: %s", role.what, e.Text, list[0].Msg)
		} else {
			ds.errorf(e.Pos, "%s %q is not a Go expression: %v", role.what, e.Text, err)
		}
		return nil, nil
	}
	base := es.fset.File(expr.Pos()).Base()
	offset := func(p token.Pos) int { return int(p) - base }
	if !es.importPackages(expr, e, role, offset, ds) {
		return nil, nil
	}

	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Uses:       map[*ast.Ident]types.Object{},
		Defs:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	if err := types.CheckExpr(es.fset, es.pkg, es.at, expr, info); err != nil {
		pos, msg := e.Pos, err.Error()
		var terr types.Error
		if errors.As(err, &terr) {
			msg = terr.Msg
			if f := es.fset.File(terr.Pos); f != nil && f.Base() == base {
				pos = shift(e.Pos, offset(terr.Pos))
			}
		}
		ds.errorf(pos, "%s", es.explain(msg, e.Text, role))
		return nil, nil
	}

	if id := es.staleName(info); id != nil {
		ds.errorf(shift(e.Pos, offset(id.Pos())), "%s", es.explain("undefined: "+id.Name, e.Text, role))
		return nil, nil
	}

	tv := info.Types[expr]
	if tv.Type == nil || tv.Type == types.Typ[types.Invalid] {
		// A type of the package that does not compile (an undefined
		// parameter type): the checker reported it there, not here.
		ds.errorf(e.Pos, "%s %s has no type: a type it uses does not compile; fix the package's errors first", role.what, e.Text)
		return nil, nil
	}
	switch {
	case tv.IsType():
		ds.errorf(e.Pos, "%s %s is a type, not a value: name a parameter or an expression, e.g. %s", role.what, e.Text, role.example)
		return nil, nil
	case tv.IsVoid():
		ds.errorf(e.Pos, "%s %s has no value", role.what, e.Text)
		return nil, nil
	case tv.IsBuiltin():
		ds.errorf(e.Pos, "%s %s is a builtin function, not a value", role.what, e.Text)
		return nil, nil
	}
	if tup, ok := tv.Type.(*types.Tuple); ok {
		ds.errorf(e.Pos, "%s %s has %d values; a %s must be a single value", role.what, e.Text, tup.Len(), role.what)
		return nil, nil
	}
	ce := &checkedExpr{text: e.Text, typ: tv.Type, value: tv.Value, parens: !isPrimary(expr), plain: isPlain(expr, info)}
	ce.refs, ce.idents, ce.unexported = es.refs(expr, info, offset)
	return ce, expr
}

// staleName returns an identifier of a checked expression that denotes a
// parameter of another method. go/types finds the scope of an expression
// by position, so the scope of a type-level directive checked for a second
// method nests in the one made for the first, which covers the same
// comment and declares the first method's parameters: they must not be
// visible here. (The packages declared there, see importPackages, are the
// same for every method, and the type's parameters are declared again.)
func (es *exprScope) staleName(info *types.Info) *ast.Ident {
	var first *ast.Ident
	for id, obj := range info.Uses {
		if _, isVar := obj.(*types.Var); !isVar {
			continue
		}
		p := obj.Parent()
		if p != nil && p != es.scope && p.Pos() == es.scope.Pos() && p.End() == es.scope.End() && (first == nil || id.Pos() < first.Pos()) {
			first = id
		}
	}
	return first
}

// importPackages declares in the directive's scope the packages that expr
// names without the file importing them (see importResolver). It reports
// ambiguous names and returns false if there are any; a name that no
// package has is left for go/types to report as undefined.
func (es *exprScope) importPackages(expr ast.Expr, e parse.Expr, role exprRole, offset func(token.Pos) int, ds *diagnostics) bool {
	ok := true
	for _, id := range unresolvedQualifiers(expr, es.scope, es.at) {
		p, msg := es.imports.resolve(es.pkg, id.Name)
		switch {
		case p != nil:
			es.scope.Insert(types.NewPkgName(token.NoPos, es.pkg, id.Name, p))
		case msg != "":
			ds.errorf(shift(e.Pos, offset(id.Pos())), "%s %s: %s", role.what, e.Text, msg)
			ok = false
		}
	}
	return ok
}

// shift returns the position n bytes after p on the same line.
func shift(p token.Position, n int) token.Position {
	p.Offset += n
	p.Column += n
	return p
}

// explain turns a go/types message about an expression into an actionable
// one.
func (es *exprScope) explain(msg, text string, role exprRole) string {
	name, undefined := strings.CutPrefix(msg, "undefined: ")
	if !undefined || strings.ContainsAny(name, ". ") {
		return fmt.Sprintf("%s %s: %s", role.what, text, msg)
	}
	if name == es.recvName {
		return fmt.Sprintf("%s %s: undefined: %s: the receiver is not available in a directive; use the method's parameters (%s)", role.what, text, name, strings.Join(es.paramNames, ", "))
	}
	if es.unnamedParams {
		return fmt.Sprintf("%s %s: undefined: %s: the method's parameters are unnamed, so a directive names them %s (a first context.Context is ctx, the others in, in2, in3, ...); use those names, or name the parameters", role.what, text, name, strings.Join(es.paramNames, ", "))
	}
	if es.blankParams && len(es.paramNames) == 0 {
		return fmt.Sprintf("%s %s: undefined: %s: the method's parameters are all _; name them to use them in %s=, e.g. (ctx context.Context, req *Request)", role.what, text, name, role.option)
	}
	suggestion := ""
	if s, ok := closestParam(name, append(slices.Clip(es.paramNames), es.results...)); ok {
		suggestion = "; did you mean " + s + "?"
	}
	if strings.Contains(text, name+".") {
		return fmt.Sprintf("%s %s: undefined: %s%s (no package of that name is imported by %s, in the standard library or imported by the package's other files; if %s is a package, import it where the package uses it)", role.what, text, name, suggestion, filepath.Base(es.fset.Position(es.at).Filename), name)
	}
	if suggestion != "" {
		return fmt.Sprintf("%s %s: undefined: %s%s", role.what, text, name, suggestion)
	}
	params := "the method has no named parameters"
	if len(es.paramNames) > 0 {
		params = "the method's parameters are " + strings.Join(es.paramNames, ", ")
	}
	if es.results != nil {
		return fmt.Sprintf("%s %s: undefined: %s (%s= may use the method's results, its parameters, the package's identifiers and packages; the results are %s, and %s)", role.what, text, name, role.option, strings.Join(es.results, ", "), params)
	}
	return fmt.Sprintf("%s %s: undefined: %s (a directive may use the method's parameters, the package's identifiers and packages; %s)", role.what, text, name, params)
}

// isPlain reports whether expr is a variable or constant, or a chain of
// field selections from one.
func isPlain(expr ast.Expr, info *types.Info) bool {
	switch x := expr.(type) {
	case *ast.Ident:
		switch info.Uses[x].(type) {
		case *types.Var, *types.Const:
			return true
		}
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[x]; ok {
			return sel.Kind() == types.FieldVal && isPlain(x.X, info)
		}
		return isPlain(x.Sel, info) // a qualified identifier
	case *ast.ParenExpr:
		return isPlain(x.X, info)
	}
	return false
}

// isPrimary reports whether a method can be called on expr without
// parentheses.
func isPrimary(expr ast.Expr) bool {
	switch expr.(type) {
	case *ast.Ident, *ast.SelectorExpr, *ast.CallExpr, *ast.IndexExpr, *ast.IndexListExpr,
		*ast.SliceExpr, *ast.TypeAssertExpr, *ast.ParenExpr, *ast.BasicLit, *ast.CompositeLit:
		return true
	}
	return false
}

// refs returns the identifiers of expr that the generated code spells
// differently (see checkedExpr.refs) and the names of all its identifiers.
func (es *exprScope) refs(expr ast.Expr, info *types.Info, offset func(token.Pos) int) ([]exprRef, []string, string) {
	var refs []exprRef
	var idents []string
	unexported := ""
	hide := func(name string) {
		if unexported == "" && !token.IsExported(name) {
			unexported = name
		}
	}
	ast.Inspect(expr, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				if pn, ok := info.Uses[id].(*types.PkgName); ok {
					// The generated file names the package itself.
					refs = append(refs, exprRef{
						start: offset(n.Pos()), end: offset(n.End()), param: -1,
						pkg: pn.Imported(), name: n.Sel.Name, importName: pn.Name(),
					})
					return false
				}
			}
			// The selected field or method keeps its name; info.Uses
			// maps it to a field or method, never to a parameter.
			if sel, ok := info.Selections[n]; ok && sel.Obj().Pkg() == es.pkg {
				hide(sel.Obj().Name())
			}
			return true
		case *ast.Ident:
			idents = append(idents, n.Name)
			obj := info.Uses[n]
			if v, ok := obj.(*types.Var); ok {
				if i, ok := es.params[v]; ok {
					refs = append(refs, exprRef{start: offset(n.Pos()), end: offset(n.End()), param: i})
					return true
				}
			}
			switch obj.(type) {
			case nil, *types.Builtin, *types.Nil:
			default:
				if p := obj.Pkg(); p == es.pkg && obj.Parent() == p.Scope() {
					hide(n.Name)
					refs = append(refs, exprRef{
						start: offset(n.Pos()), end: offset(n.End()), param: -1,
						pkg: p, name: n.Name, importName: p.Name(),
					})
					break
				}
				// An object of another package named without a qualifier:
				// the file dot-imports it.
				if p := obj.Pkg(); p != nil && p != es.pkg && obj.Parent() == p.Scope() {
					refs = append(refs, exprRef{
						start: offset(n.Pos()), end: offset(n.End()), param: -1,
						pkg: p, name: n.Name, importName: p.Name(),
					})
				}
			}
		}
		return true
	})
	slices.SortFunc(refs, func(a, b exprRef) int { return a.start - b.start })
	return refs, idents, unexported
}
