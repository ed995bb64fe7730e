package generate

import (
	"fmt"
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/packages"
)

// A type-level directive, in the doc comment of an interface or struct
// type, is one limit that every method of the type counts against (per
// tenant, per client), on top of each method's own limits and all or
// nothing with them. Its key is checked in the scope of each method, so
// it typically uses what every method has, such as ctx. A method opts out
// with //ratelimit:exempt. cost= is not allowed there: methods differ in
// what a call costs, which their own directives say.

// typeLimits are the type-level limits of one type.
type typeLimits struct {
	a    *annotated
	file *ast.File
	// limits are the limits as declared, one runtime.Limit each; every
	// method gets copies (perMethod) whose keys are checked in its scope.
	limits    []*limit
	perMethod map[*types.Func][]*limit
}

// buildTypeLimits checks the type-level directives of a.owner. It returns
// nil if they have problems.
func buildTypeLimits(pkg *packages.Package, a *annotated, file *ast.File, imports *importResolver, ds *diagnostics) *typeLimits {
	ok := checkLimitNames(a, ds)
	tl := &typeLimits{a: a, file: file, perMethod: map[*types.Func][]*limit{}}
	for i, d := range a.directives {
		for _, e := range d.errs {
			ds.errorf(e.Pos, "%s", e.Msg)
			ok = false
		}
		if d.parsed == nil {
			ok = false
			continue
		}
		if opt, has := d.parsed.Lookup("cost"); has {
			ds.errorf(opt.NamePos, "cost= cannot be on a type-level directive: the type's methods differ in what a call costs; put cost= on a method's own directive")
			ok = false
		}
		if opt, has := d.parsed.Lookup("concurrency"); has {
			ds.errorf(opt.NamePos, "concurrency= cannot be on a type-level directive yet: put it on each method's own directive, with one name= to share the permits")
			ok = false
		}
		for _, name := range []string{"refund", "settle"} {
			if opt, has := d.parsed.Lookup(name); has {
				ds.errorf(opt.NamePos, "%s= cannot be on a type-level directive: the type's methods differ in their results; put %s= on a method's own directive", name, name)
				ok = false
			}
		}
		l := newLimit(a, d, i)
		if d.parsed.MaxExpr != nil {
			l.maxExpr, l.max = staticTypeMax(pkg, file, a, d, imports)
		}
		if len(d.errs) == 0 && !checkLimitValues(l, d, ds) {
			ok = false
		}
		tl.limits = append(tl.limits, l)
	}
	if !ok {
		return nil
	}
	return tl
}

// staticTypeMax returns the max= expression of the type-level directive d
// of a and its value, if it is a constant that no method's parameters
// change: one that checks in a scope without parameters. Otherwise each
// method's copy computes it per call, and reports its problems.
func staticTypeMax(pkg *packages.Package, file *ast.File, a *annotated, d *directive, imports *importResolver) (*maxExpr, int) {
	var tparams *types.TypeParamList
	if named, ok := a.owner.Type().(*types.Named); ok {
		tparams = named.TypeParams()
	}
	noParams := types.NewSignatureType(nil, nil, nil, nil, nil, false)
	es, err := newExprScope(pkg.Fset, pkg.Types, pkg.TypesInfo.Scopes[file], d.comment, noParams, tparams, imports)
	if err != nil {
		return nil, 0
	}
	m := es.checkMax(*d.parsed.MaxExpr, &diagnostics{})
	if m == nil {
		return nil, 0
	}
	n, ok := m.static()
	if !ok {
		return nil, 0
	}
	return m, n
}

// forMethod returns the copies of the type-level limits for method fn,
// with their keys checked in its scope, or nil if fn is exempt or they
// have problems, which go to ds.
func (tl *typeLimits) forMethod(pkg *packages.Package, fn *types.Func, exempt bool, imports *importResolver, ds *diagnostics) []*limit {
	if exempt {
		return nil
	}
	if ls, done := tl.perMethod[fn]; done {
		return ls
	}
	tl.perMethod[fn] = nil
	sig := fn.Type().(*types.Signature)
	owner := tl.a.owner.Name()
	if !returnsError(sig) {
		ds.errorf(tl.a.directives[0].pos, "type %s has a type-level //ratelimit: directive, but its method %s does not return an error to report a denial with: give %s an error result, or opt it out with //ratelimit:exempt in its doc comment", owner, fn.Name(), fn.Name())
		return nil
	}
	var tparams *types.TypeParamList
	if named, ok := tl.a.owner.Type().(*types.Named); ok {
		tparams = named.TypeParams()
	}
	var out []*limit
	for _, c := range tl.limits {
		l := *c
		l.fn, l.canonical, l.key, l.cost, l.maxExpr = fn, c, nil, nil, nil
		// Problems are the method's: say which.
		sub := &diagnostics{}
		if !checkLimitExprs(pkg, tl.file, tl.a.directives[c.index], sig, tparams, imports, &l, sub) {
			for _, d := range sub.list {
				ds.errorf(d.Pos, "for method %s.%s: %s (a type-level key or max must make sense in every method; opt a method out with //ratelimit:exempt)", owner, fn.Name(), d.Msg)
			}
			return nil
		}
		if c.key == nil {
			// The key's types, for comparing limits that share a name,
			// are the same in every method.
			c.key = l.key
		}
		out = append(out, &l)
	}
	tl.perMethod[fn] = out
	return out
}

// declaringTypeLimits returns the type-level limits that method fn, of
// m's package, counts against: those of the type that declares it, unless
// it is exempt. A type that gets fn by embedding keeps them.
func (m *pkgModel) declaringTypeLimits(fn *types.Func, ds *diagnostics) []*limit {
	fn = fn.Origin()
	owner := receiverTypeName(fn)
	if owner == nil || m.typeLevel[owner] == nil {
		return nil
	}
	_, exempt := m.exempt[fn]
	return m.typeLevel[owner].forMethod(m.pkg, fn, exempt, m.imports, ds)
}

// label names what a's directives are on, for messages: Type.Method, or
// Type for a type-level directive.
func (a *annotated) label() string {
	if a.fn == nil {
		return a.owner.Name()
	}
	return fmt.Sprintf("%s.%s", a.owner.Name(), a.fn.Name())
}
