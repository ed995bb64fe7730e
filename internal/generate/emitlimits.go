package generate

import (
	"github.com/dave/jennifer/jen"
)

// limitsFunc is the name of the function that every package's
// unconstrained generated file declares: it returns the package's limits,
// for runtime.Overrides.AddLimits, so that an overrides file is checked
// against the limits it would produce.
const limitsFunc = "RateLimits"

// limitsFuncDecl emits the limits function of the package: one Request
// for each limit declared in the unconstrained file, other packages'
// copies included, with its constant cost, if any, which an override must
// leave room for. A limit declared under a build constraint is left out:
// its variable exists only where the constraint holds, and a run in
// another configuration, which cannot see it, must write the same file.
func (e *emitter) limitsFuncDecl() {
	var elems []jen.Code
	for _, l := range e.declared {
		elems = append(elems, jen.Line().Values(e.requestFields(jen.Id(e.limitVar(l)), nil, e.declaredCost(l))...))
	}
	elems = append(elems, jen.Line())
	e.f.Line()
	e.comment(limitsFunc + " returns the limits of this package's wrappers, for [" + e.runtimeName + ".Overrides.AddLimits], except those declared under build constraints: each in a Request with the constant cost of its calls, if they have one, and without a Max where each call computes it.")
	e.f.Func().Id(limitsFunc).Params().Index().Qual(RuntimePath, "Request").Block(
		jen.Return(jen.Index().Qual(RuntimePath, "Request").Values(elems...)),
	)
}

// declaredCost spells the constant cost of l's calls as a Request's Cost,
// or returns nil when they cost 1 or what each call computes. The cost is
// spelt as written when this file's wrappers spell it too (so its imports
// are the file's) and it uses no parameter, such as len of an array;
// otherwise as its value.
func (e *emitter) declaredCost(l *limit) jen.Code {
	if l.cost == nil || computedCost(l) {
		return nil
	}
	c, _ := l.cost.constantCost()
	if c == 1 {
		return nil
	}
	spelt := false
	for _, u := range e.used {
		spelt = spelt || u == l
	}
	for _, r := range l.cost.refs {
		spelt = spelt && r.param < 0
	}
	if spelt {
		return e.constantCost(l.cost, nil)
	}
	return jen.Lit(c)
}
