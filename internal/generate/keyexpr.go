package generate

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// keyKind says how a key part's value becomes a string.
type keyKind int

const (
	keyString      keyKind = iota // a string: used as is
	keyNamedString                // a type whose underlying type is string: string(x)
	keyInt                        // int (or an untyped integer constant): strconv.Itoa
	keySigned                     // another signed integer: strconv.FormatInt
	keyUnsigned                   // an unsigned integer: strconv.FormatUint
	keyBool                       // strconv.FormatBool
	keyBytes                      // a byte slice: string(x)
	keyStringer                   // x.String()
)

// keyPart is one type-checked part of a key= option.
type keyPart struct {
	// text is the expression as written.
	text string
	kind keyKind
	// typ is the expression's type; untyped constants keep their untyped
	// type.
	typ types.Type
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
}

// exprRef is one identifier (or pkg.Name selector) of a key expression,
// at text[start:end].
type exprRef struct {
	start, end int
	// param is the index of the parameter the identifier denotes, or -1.
	param int
	// pkg and name denote a package-level object of another package when
	// param is -1.
	pkg  *types.Package
	name string
	// importName is how the source file names pkg, the preferred import
	// name in the generated file.
	importName string
}

// keyScope is what a key expression may refer to: the method's parameters
// (and type parameters), nested in the scope of the file that declares the
// method.
type keyScope struct {
	fset  *token.FileSet
	pkg   *types.Package
	at    token.Pos // the directive's position, inside scope
	scope *types.Scope
	// params maps the parameter variables of scope to their index.
	params map[*types.Var]int
	// paramNames and recvName are for messages.
	paramNames []string
	recvName   string
}

// newKeyScope builds the scope in which the key of the directive at at, on
// method sig, is checked. go/types evaluates an expression in the innermost
// scope containing a position, so the new scope covers the directive
// comment, where no other scope lies. Its variables are fresh copies of
// the parameters: the real ones are visible only after the signature.
func newKeyScope(fset *token.FileSet, pkg *types.Package, fileScope *types.Scope, c *ast.Comment, sig *types.Signature, tparams *types.TypeParamList) (*keyScope, error) {
	// The directive of a generic interface's method lies in the scope of
	// the type's parameters.
	if fileScope == nil {
		return nil, errors.New("the file was not type-checked")
	}
	parent := fileScope.Innermost(c.Slash)
	if parent == nil {
		return nil, errors.New("the directive lies outside its file's scope")
	}
	ks := &keyScope{
		fset:   fset,
		pkg:    pkg,
		at:     c.Slash,
		scope:  types.NewScope(parent, c.Slash, c.End(), "ratelimit key"),
		params: map[*types.Var]int{},
	}
	if fileScope.Innermost(c.Slash) != ks.scope {
		return nil, errors.New("the directive lies inside another scope")
	}
	for i := 0; i < tparams.Len(); i++ {
		tp := tparams.At(i)
		if name := tp.Obj().Name(); name != "_" {
			ks.scope.Insert(types.NewTypeName(token.NoPos, pkg, name, tp))
		}
	}
	for i := 0; i < sig.Params().Len(); i++ {
		p := sig.Params().At(i)
		if p.Name() == "" || p.Name() == "_" {
			continue
		}
		v := types.NewParam(token.NoPos, pkg, p.Name(), p.Type())
		ks.scope.Insert(v)
		ks.params[v] = i
		ks.paramNames = append(ks.paramNames, p.Name())
	}
	if r := sig.Recv(); r != nil && r.Name() != "" && r.Name() != "_" {
		ks.recvName = r.Name()
	}
	return ks, nil
}

// check type-checks one key part and decides how it becomes a string. It
// reports problems to ds and returns nil if there are any.
func (ks *keyScope) check(e parse.Expr, ds *diagnostics) *keyPart {
	expr, err := parser.ParseExprFrom(ks.fset, e.Pos.Filename+"#key", e.Text, parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			ds.errorf(shift(e.Pos, list[0].Pos.Offset), "key part %q is not a Go expression: %s", e.Text, list[0].Msg)
		} else {
			ds.errorf(e.Pos, "key part %q is not a Go expression: %v", e.Text, err)
		}
		return nil
	}
	base := ks.fset.File(expr.Pos()).Base()
	offset := func(p token.Pos) int { return int(p) - base }

	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Uses:       map[*ast.Ident]types.Object{},
		Defs:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	if err := types.CheckExpr(ks.fset, ks.pkg, ks.at, expr, info); err != nil {
		pos, msg := e.Pos, err.Error()
		var terr types.Error
		if errors.As(err, &terr) {
			msg = terr.Msg
			if f := ks.fset.File(terr.Pos); f != nil && f.Base() == base {
				pos = shift(e.Pos, offset(terr.Pos))
			}
		}
		ds.errorf(pos, "%s", ks.explain(msg, e.Text))
		return nil
	}

	tv := info.Types[expr]
	switch {
	case tv.IsType():
		ds.errorf(e.Pos, "key part %s is a type, not a value: name a parameter or an expression, e.g. key=req.ID", e.Text)
		return nil
	case tv.IsVoid():
		ds.errorf(e.Pos, "key part %s has no value", e.Text)
		return nil
	case tv.IsBuiltin():
		ds.errorf(e.Pos, "key part %s is a builtin function, not a value", e.Text)
		return nil
	}
	if tup, ok := tv.Type.(*types.Tuple); ok {
		ds.errorf(e.Pos, "key part %s has %d values; a key part must be a single value", e.Text, tup.Len())
		return nil
	}

	kp := &keyPart{text: e.Text, typ: tv.Type, parens: !isPrimary(expr)}
	kind, ok := classify(tv.Type)
	if !ok {
		if !ks.isStringer(expr) {
			ds.errorf(e.Pos, "%s", unsupportedKeyType(e.Text, tv.Type, ks.pkg))
			return nil
		}
		kind = keyStringer
	}
	kp.kind = kind
	kp.refs, kp.idents = ks.refs(expr, info, offset)
	return kp
}

// shift returns the position n bytes after p on the same line.
func shift(p token.Position, n int) token.Position {
	p.Offset += n
	p.Column += n
	return p
}

// explain turns a go/types message about a key part into an actionable one.
func (ks *keyScope) explain(msg, text string) string {
	name, undefined := strings.CutPrefix(msg, "undefined: ")
	if !undefined || strings.ContainsAny(name, ". ") {
		return fmt.Sprintf("key part %s: %s", text, msg)
	}
	if name == ks.recvName {
		return fmt.Sprintf("key part %s: undefined: %s: the receiver is not available in a key; use the method's parameters (%s)", text, name, strings.Join(ks.paramNames, ", "))
	}
	if s, ok := closest(name, ks.paramNames); ok {
		return fmt.Sprintf("key part %s: undefined: %s; did you mean %s?", text, name, s)
	}
	if strings.Contains(text, name+".") {
		return fmt.Sprintf("key part %s: undefined: %s: if %s is a package, import it in %s (and use it outside the directive too, as Go requires): a key sees the imports of the file that declares the method", text, name, name, filepath.Base(ks.fset.Position(ks.at).Filename))
	}
	params := "the method has no named parameters"
	if len(ks.paramNames) > 0 {
		params = "the method's parameters are " + strings.Join(ks.paramNames, ", ")
	}
	return fmt.Sprintf("key part %s: undefined: %s (a key may use the method's parameters, the package's identifiers and the file's imports; %s)", text, name, params)
}

// classify returns how a value of type t becomes a string, if it is one of
// the basic key types.
func classify(t types.Type) (keyKind, bool) {
	if tp, ok := types.Unalias(t).(*types.TypeParam); ok {
		return classifyTypeParam(tp)
	}
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Basic:
		info := u.Info()
		switch {
		case info&types.IsString != 0:
			if types.Identical(t, types.Typ[types.String]) || u.Kind() == types.UntypedString {
				return keyString, true
			}
			return keyNamedString, true
		case info&types.IsInteger != 0:
			switch {
			case types.Identical(t, types.Typ[types.Int]) || u.Kind() == types.UntypedInt || u.Kind() == types.UntypedRune:
				return keyInt, true
			case info&types.IsUnsigned != 0:
				return keyUnsigned, true
			default:
				return keySigned, true
			}
		case info&types.IsBoolean != 0:
			return keyBool, true
		}
	case *types.Slice:
		if b, ok := types.Unalias(u.Elem()).(*types.Basic); ok && b.Kind() == types.Byte {
			return keyBytes, true
		}
	}
	return 0, false
}

// classifyTypeParam classifies a type parameter whose type set holds only
// types of one key kind: every ~string, every integer, every bool or every
// byte slice. Its values are converted (string(x), int64(x)...), which is
// valid for each type of the set.
func classifyTypeParam(tp *types.TypeParam) (keyKind, bool) {
	terms, ok := typeSetTerms(tp.Constraint())
	if !ok || len(terms) == 0 {
		return 0, false
	}
	var kinds []keyKind
	for _, t := range terms {
		k, ok := classify(t)
		if !ok {
			return 0, false
		}
		switch k {
		case keyString:
			k = keyNamedString
		case keyInt:
			k = keySigned
		}
		kinds = append(kinds, k)
	}
	first := kinds[0]
	for _, k := range kinds[1:] {
		switch {
		case k == first:
		case (k == keySigned || k == keyUnsigned) && (first == keySigned || first == keyUnsigned):
			first = keySigned // a mix is formatted as int64
		default:
			return 0, false
		}
	}
	return first, true
}

// typeSetTerms returns the types of the terms of the constraint's type
// set, or false if it has none (any type may be in it) or is too involved
// to tell.
func typeSetTerms(constraint types.Type) ([]types.Type, bool) {
	iface, ok := constraint.Underlying().(*types.Interface)
	if !ok {
		return nil, false
	}
	var terms []types.Type
	found := false
	for i := 0; i < iface.NumEmbeddeds(); i++ {
		switch e := types.Unalias(iface.EmbeddedType(i)).(type) {
		case *types.Union:
			if found {
				return nil, false // an intersection of unions
			}
			found = true
			for j := 0; j < e.Len(); j++ {
				terms = append(terms, e.Term(j).Type())
			}
		default:
			if _, isIface := e.Underlying().(*types.Interface); isIface {
				sub, ok := typeSetTerms(e)
				if ok {
					if found {
						return nil, false
					}
					found = true
					terms = sub
				}
				continue
			}
			if found {
				return nil, false
			}
			found = true
			terms = append(terms, e)
		}
	}
	return terms, found
}

// isStringer reports whether expr.String() is a call returning string, the
// way the generated code would write it: this follows addressability,
// embedding and type parameters exactly as the compiler does.
func (ks *keyScope) isStringer(expr ast.Expr) bool {
	call := &ast.CallExpr{Fun: &ast.SelectorExpr{X: &ast.ParenExpr{X: expr}, Sel: ast.NewIdent("String")}}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	if err := types.CheckExpr(ks.fset, ks.pkg, ks.at, call, info); err != nil {
		return false
	}
	return types.Identical(info.Types[call].Type, types.Typ[types.String])
}

// unsupportedKeyType explains why a value of type t cannot be a key part,
// suggesting a field that can when t is a struct.
func unsupportedKeyType(text string, t types.Type, pkg *types.Package) string {
	ts := types.TypeString(t, types.RelativeTo(pkg))
	msg := fmt.Sprintf("key part %s has type %s, which cannot be a key: a key part must be a string, an integer, a bool, a []byte or implement fmt.Stringer", text, ts)
	if field, ok := suggestField(t); ok {
		return msg + fmt.Sprintf("; use a field such as key=%s.%s, or give %s a String() string method", text, field, ts)
	}
	if named, ok := types.Unalias(t).(*types.Named); ok && named.Obj().Pkg() == pkg {
		return msg + fmt.Sprintf("; give %s a String() string method, or key on one of its fields", ts)
	}
	return msg
}

// suggestField returns a field of t (or of *t) that can be a key part,
// preferring one that looks like an identifier.
func suggestField(t types.Type) (string, bool) {
	u := types.Unalias(t).Underlying()
	if p, ok := u.(*types.Pointer); ok {
		u = types.Unalias(p.Elem()).Underlying()
	}
	st, ok := u.(*types.Struct)
	if !ok {
		return "", false
	}
	var fields []string
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if _, ok := classify(f.Type()); ok && f.Exported() {
			fields = append(fields, f.Name())
		}
	}
	if len(fields) == 0 {
		return "", false
	}
	for _, f := range fields {
		if f == "ID" || strings.HasSuffix(f, "ID") || strings.HasSuffix(f, "Id") {
			return f, true
		}
	}
	return fields[0], true
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
// differently (see keyPart.refs) and the names of all its identifiers.
func (ks *keyScope) refs(expr ast.Expr, info *types.Info, offset func(token.Pos) int) ([]exprRef, []string) {
	var refs []exprRef
	var idents []string
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
			return true
		case *ast.Ident:
			idents = append(idents, n.Name)
			switch obj := info.Uses[n].(type) {
			case *types.Var:
				if i, ok := ks.params[obj]; ok {
					refs = append(refs, exprRef{start: offset(n.Pos()), end: offset(n.End()), param: i})
				}
			case nil:
			default:
				// An object of another package named without a qualifier:
				// the file dot-imports it.
				if p := obj.Pkg(); p != nil && p != ks.pkg && obj.Parent() == p.Scope() {
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
	return refs, idents
}
