package generate

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/types"
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
	keyTime                       // a time.Time: its UnixNano, in decimal
)

// keyPart is one type-checked part of a key= option.
type keyPart struct {
	checkedExpr
	kind keyKind
}

// checkKey type-checks one key part and decides how it becomes a string.
// It reports problems to ds and returns nil if there are any.
func (es *exprScope) checkKey(e parse.Expr, ds *diagnostics) *keyPart {
	ce, expr := es.check(e, keyRole, ds)
	if ce == nil {
		return nil
	}
	kind, ok := classify(ce.typ)
	if !ok {
		if !es.isStringer(expr) {
			ds.errorf(e.Pos, "%s", unsupportedKeyType(e.Text, ce.typ, es.pkg))
			return nil
		}
		kind = keyStringer
	}
	return &keyPart{checkedExpr: *ce, kind: kind}
}

// classify returns how a value of type t becomes a string, if it is one of
// the basic key types.
func classify(t types.Type) (keyKind, bool) {
	if tp, ok := types.Unalias(t).(*types.TypeParam); ok {
		return classifyTypeParam(tp)
	}
	if isTime(t) {
		// Its String method would put the zone and the monotonic clock
		// reading in the key: one instant would have many keys.
		return keyTime, true
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
		if !ok || k == keyTime {
			// A type parameter has the methods of its constraint only.
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
func (es *exprScope) isStringer(expr ast.Expr) bool {
	call := &ast.CallExpr{Fun: &ast.SelectorExpr{X: &ast.ParenExpr{X: expr}, Sel: ast.NewIdent("String")}}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	if err := types.CheckExpr(es.fset, es.pkg, es.at, call, info); err != nil {
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

// checkKeyVaries reports a key whose every part is a constant, such as
// key="req.Email" (a SpEL habit) or key=1: it would count every call under
// one key, which is what omitting key= says plainly. A constant part beside
// others (key=req.Tenant,"v2") is fine. It returns false on error.
func checkKeyVaries(key []*keyPart, exprs []parse.Expr, ds *diagnostics) bool {
	for _, kp := range key {
		if kp.value == nil {
			return true
		}
	}
	texts := make([]string, len(key))
	for i, kp := range key {
		texts[i] = kp.text
	}
	what := "key=" + texts[0]
	if len(key) > 1 {
		what = "every part of key=" + strings.Join(texts, ",")
	}
	msg := fmt.Sprintf("%s is a constant, so every call would count under one key: for one limit shared by all callers, omit key=", what)
	if len(key) == 1 && key[0].value.Kind() == constant.String {
		if s := constant.StringVal(key[0].value); s != "" && isGoExpr(s) {
			msg += fmt.Sprintf("; to key on the expression, write it without quotes: key=%s", s)
		}
	}
	ds.errorf(exprs[0].Pos, "%s", msg)
	return false
}

// isGoExpr reports whether s parses as a Go expression.
func isGoExpr(s string) bool {
	_, err := parser.ParseExpr(s)
	return err == nil
}

// isTime reports whether t is time.Time itself.
func isTime(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
}
