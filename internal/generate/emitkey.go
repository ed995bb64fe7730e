package generate

import (
	"fmt"
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"
)

// keyWords describes a key for doc comments: "req.Email", "(a, b)".
func keyWords(key []*keyPart) string {
	texts := make([]string, len(key))
	for i, kp := range key {
		texts[i] = kp.text
	}
	if len(texts) == 1 {
		return texts[0]
	}
	return "(" + strings.Join(texts, ", ") + ")"
}

// keyCode returns the expression of the key string, or nil for no key. A
// composite key is built in a stack buffer by statements appended to body,
// with one allocation for the final string.
func (e *emitter) keyCode(key []*keyPart, params []string, scope *names, body *[]jen.Code) jen.Code {
	switch len(key) {
	case 0:
		return nil
	case 1:
		return e.partString(key[0], params)
	}
	buf, b := scope.fresh("buf"), scope.fresh("b")
	*body = append(*body, jen.Var().Id(buf).Index(jen.Lit(64)).Byte())
	for i, kp := range key {
		into := jen.Id(b)
		if i == 0 {
			into = jen.Id(buf).Index(jen.Empty(), jen.Lit(0))
		}
		var call *jen.Statement
		switch kp.kind {
		case keyInt, keySigned:
			// Integers are appended without an intermediate string.
			call = jen.Qual(RuntimePath, "AppendKeyInt").Call(into, e.convert(&kp.checkedExpr, params, types.Typ[types.Int64]))
		case keyUnsigned:
			call = jen.Qual(RuntimePath, "AppendKeyUint").Call(into, e.convert(&kp.checkedExpr, params, types.Typ[types.Uint64]))
		case keyTime:
			call = jen.Qual(RuntimePath, "AppendKeyInt").Call(into, e.unixNano(kp, params))
		default:
			call = jen.Qual(RuntimePath, "AppendKeyPart").Call(into, e.partString(kp, params))
		}
		if i == 0 {
			*body = append(*body, jen.Id(b).Op(":=").Add(call))
		} else {
			*body = append(*body, jen.Id(b).Op("=").Add(call))
		}
	}
	return jen.String().Call(jen.Id(b))
}

// partString spells one key part as a string.
func (e *emitter) partString(kp *keyPart, params []string) *jen.Statement {
	x := e.exprCode(&kp.checkedExpr, params)
	switch kp.kind {
	case keyString:
		return x
	case keyNamedString, keyBytes:
		return jen.String().Call(x)
	case keyInt:
		return jen.Qual("strconv", "Itoa").Call(x)
	case keySigned:
		return jen.Qual("strconv", "FormatInt").Call(e.convert(&kp.checkedExpr, params, types.Typ[types.Int64]), jen.Lit(10))
	case keyUnsigned:
		return jen.Qual("strconv", "FormatUint").Call(e.convert(&kp.checkedExpr, params, types.Typ[types.Uint64]), jen.Lit(10))
	case keyBool:
		return jen.Qual("strconv", "FormatBool").Call(e.convert(&kp.checkedExpr, params, types.Typ[types.Bool]))
	case keyStringer:
		if kp.parens {
			x = jen.Parens(x)
		}
		return x.Dot("String").Call()
	case keyTime:
		return jen.Qual("strconv", "FormatInt").Call(e.unixNano(kp, params), jen.Lit(10))
	}
	panic(fmt.Sprintf("unknown key kind %d", kp.kind))
}

// unixNano spells the canonical form of a time.Time key part: the instant
// in nanoseconds since the Unix epoch, which no zone, location or
// monotonic clock reading changes.
func (e *emitter) unixNano(kp *keyPart, params []string) *jen.Statement {
	x := e.exprCode(&kp.checkedExpr, params)
	if kp.parens {
		x = jen.Parens(x)
	}
	return x.Dot("UnixNano").Call()
}

// usesStrconv reports whether spelling key calls the strconv package.
func usesStrconv(key []*keyPart) bool {
	for _, kp := range key {
		switch kp.kind {
		case keyBool:
			return true
		case keyInt, keySigned, keyUnsigned, keyTime:
			if len(key) == 1 {
				return true
			}
		}
	}
	return false
}

// convert spells the expression converted to t, without a conversion when
// it already has type t.
func (e *emitter) convert(ce *checkedExpr, params []string, t *types.Basic) *jen.Statement {
	x := e.exprCode(ce, params)
	if b, ok := ce.typ.(*types.Basic); types.Identical(ce.typ, t) || ok && b.Info()&types.IsUntyped != 0 {
		return x // an untyped constant converts implicitly
	}
	return jen.Id(t.Name()).Call(x)
}

// exprCode spells a directive's expression as written, with its parameters
// under their names in the wrapper and its package-qualified identifiers
// under the generated file's import names.
func (e *emitter) exprCode(ce *checkedExpr, params []string) *jen.Statement {
	s := jen.Null()
	at := 0
	for _, r := range ce.refs {
		if r.start > at {
			s.Op(ce.text[at:r.start])
		}
		switch {
		case r.param >= 0:
			s.Id(params[r.param])
		case r.pkg.Path() == e.pkg.Path():
			s.Id(r.name) // the directive's own package, or a promoted method's
		default:
			s.Qual(r.pkg.Path(), r.name)
		}
		at = r.end
	}
	if at < len(ce.text) {
		s.Op(ce.text[at:])
	}
	return s
}
