package generate

import (
	"go/types"

	"github.com/dave/jennifer/jen"
)

// typ spells t in the generated file: named and alias types by name,
// qualified with the import name the registry chose, type parameters by
// their name, everything else structurally. Aliases keep their name (any
// stays any) so that signatures read as the user wrote them.
func (e *emitter) typ(t types.Type) *jen.Statement {
	switch t := t.(type) {
	case *types.Alias:
		return e.typeArgs(e.objRef(t.Obj()), t.TypeArgs())
	case *types.Named:
		return e.typeArgs(e.objRef(t.Obj()), t.TypeArgs())
	case *types.TypeParam:
		return jen.Id(t.Obj().Name())
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			return jen.Qual("unsafe", "Pointer")
		}
		return jen.Id(t.Name())
	case *types.Pointer:
		return jen.Op("*").Add(e.typ(t.Elem()))
	case *types.Slice:
		return jen.Index().Add(e.typ(t.Elem()))
	case *types.Array:
		return jen.Index(jen.Lit(int(t.Len()))).Add(e.typ(t.Elem()))
	case *types.Map:
		return jen.Map(e.typ(t.Key())).Add(e.typ(t.Elem()))
	case *types.Chan:
		elem := e.typ(t.Elem())
		switch t.Dir() {
		case types.SendOnly:
			return jen.Chan().Op("<-").Add(elem)
		case types.RecvOnly:
			return jen.Op("<-").Chan().Add(elem)
		}
		// chan (<-chan T) needs the parentheses: chan <-chan T is a
		// send-only channel of chan T.
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
			return jen.Chan().Parens(elem)
		}
		return jen.Chan().Add(elem)
	case *types.Signature:
		return jen.Func().Add(e.signature(t, nil))
	case *types.Struct:
		fields := make([]jen.Code, t.NumFields())
		for i := range fields {
			f := t.Field(i)
			var s *jen.Statement
			if f.Embedded() {
				s = e.typ(f.Type())
			} else {
				s = jen.Id(f.Name()).Add(e.typ(f.Type()))
			}
			if tag := t.Tag(i); tag != "" {
				s.Lit(tag)
			}
			fields[i] = s
		}
		// On one line, as such types are written in signatures.
		return jen.Custom(jen.Options{Open: "struct{", Close: "}", Separator: ";"}, fields...)
	case *types.Interface:
		var items []jen.Code
		for i := 0; i < t.NumEmbeddeds(); i++ {
			items = append(items, e.typ(t.EmbeddedType(i)))
		}
		for i := 0; i < t.NumExplicitMethods(); i++ {
			m := t.ExplicitMethod(i)
			items = append(items, jen.Id(m.Name()).Add(e.signature(m.Type().(*types.Signature), nil)))
		}
		if t.IsImplicit() && len(items) == 1 {
			return items[0].(*jen.Statement)
		}
		return jen.Custom(jen.Options{Open: "interface{", Close: "}", Separator: ";"}, items...)
	case *types.Union:
		terms := make([]jen.Code, t.Len())
		for i := range terms {
			term := t.Term(i)
			s := e.typ(term.Type())
			if term.Tilde() {
				s = jen.Op("~").Add(s)
			}
			terms[i] = s
		}
		return jen.Union(terms...)
	}
	// Tuples and untyped types never appear in a signature.
	return jen.Id(t.String())
}

// signature spells a parameter list and results. names, if not nil, holds
// the parameter names; results are unnamed.
func (e *emitter) signature(sig *types.Signature, names []string) *jen.Statement {
	params := make([]jen.Code, sig.Params().Len())
	for i := range params {
		p := sig.Params().At(i)
		s := jen.Null()
		if names != nil {
			s = jen.Id(names[i])
		}
		if sig.Variadic() && i == len(params)-1 {
			s.Op("...").Add(e.typ(p.Type().(*types.Slice).Elem()))
		} else {
			s.Add(e.typ(p.Type()))
		}
		params[i] = s
	}
	out := jen.Params(params...)
	switch n := sig.Results().Len(); n {
	case 0:
	case 1:
		out.Add(e.typ(sig.Results().At(0).Type()))
	default:
		results := make([]jen.Code, n)
		for i := range results {
			results[i] = e.typ(sig.Results().At(i).Type())
		}
		out.Params(results...)
	}
	return out
}

// objRef names a package-level type or alias.
func (e *emitter) objRef(obj types.Object) *jen.Statement {
	if obj.Pkg() == nil || obj.Pkg() == e.pkg {
		return jen.Id(obj.Name())
	}
	return jen.Qual(obj.Pkg().Path(), obj.Name())
}

func (e *emitter) typeArgs(s *jen.Statement, args *types.TypeList) *jen.Statement {
	if args.Len() == 0 {
		return s
	}
	items := make([]jen.Code, args.Len())
	for i := range items {
		items[i] = e.typ(args.At(i))
	}
	return s.Types(items...)
}

// typeParamsDecl spells a type parameter list with its constraints, as
// declared: [K comparable, V any].
func (e *emitter) typeParamsDecl(tps *types.TypeParamList) []jen.Code {
	items := make([]jen.Code, tps.Len())
	for i := range items {
		tp := tps.At(i)
		items[i] = jen.Id(tp.Obj().Name()).Add(e.typ(tp.Constraint()))
	}
	return items
}

// typeParamsUse spells a type parameter list as type arguments: [K, V].
func typeParamsUse(tps *types.TypeParamList) []jen.Code {
	items := make([]jen.Code, tps.Len())
	for i := range items {
		items[i] = jen.Id(tps.At(i).Obj().Name())
	}
	return items
}

// visitPackages calls visit for every named or alias type (and unsafe)
// that spelling t mentions, with its package: the generated file imports
// them. It follows typ exactly.
func visitPackages(t types.Type, visit func(pkg *types.Package, obj types.Object)) {
	var walk func(t types.Type)
	walkSig := func(sig *types.Signature) {
		for i := 0; i < sig.Params().Len(); i++ {
			walk(sig.Params().At(i).Type())
		}
		for i := 0; i < sig.Results().Len(); i++ {
			walk(sig.Results().At(i).Type())
		}
	}
	walkArgs := func(args *types.TypeList) {
		for i := 0; i < args.Len(); i++ {
			walk(args.At(i))
		}
	}
	walk = func(t types.Type) {
		switch t := t.(type) {
		case *types.Alias:
			if t.Obj().Pkg() != nil {
				visit(t.Obj().Pkg(), t.Obj())
			}
			walkArgs(t.TypeArgs())
		case *types.Named:
			if t.Obj().Pkg() != nil {
				visit(t.Obj().Pkg(), t.Obj())
			}
			walkArgs(t.TypeArgs())
		case *types.Basic:
			if t.Kind() == types.UnsafePointer {
				visit(types.Unsafe, nil)
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Signature:
			walkSig(t)
		case *types.Struct:
			for i := 0; i < t.NumFields(); i++ {
				walk(t.Field(i).Type())
			}
		case *types.Interface:
			for i := 0; i < t.NumEmbeddeds(); i++ {
				walk(t.EmbeddedType(i))
			}
			for i := 0; i < t.NumExplicitMethods(); i++ {
				walkSig(t.ExplicitMethod(i).Type().(*types.Signature))
			}
		case *types.Union:
			for i := 0; i < t.Len(); i++ {
				walk(t.Term(i).Type())
			}
		}
	}
	walk(t)
}
