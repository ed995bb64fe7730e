package generate

import (
	"github.com/dave/jennifer/jen"
)

// exprs returns l's key parts and cost.
func (l *limit) exprs() []*checkedExpr {
	var out []*checkedExpr
	for _, kp := range l.key {
		out = append(out, &kp.checkedExpr)
	}
	if l.cost != nil {
		out = append(out, &l.cost.checkedExpr)
	}
	return out
}

// costFuncNeeded reports whether one of limits converts a computed cost
// through the generated function (see costFuncs).
func costFuncNeeded(limits []*limit) bool {
	for _, l := range limits {
		if c := l.cost; c != nil && c.value == nil && !c.isInt && !c.fits {
			return true
		}
	}
	return false
}

// costCode spells the int the runtime is given for cost c: a constant as
// it is (checked against the limit's capacity at generate time), an int as
// it is, a small integer converted, and anything else through the
// generated conversion.
func (e *emitter) costCode(c *costExpr, params []string) jen.Code {
	x := e.exprCode(&c.checkedExpr, params)
	switch {
	case c.value != nil && c.isInt:
		return x
	case c.value != nil:
		return jen.Int().Call(x)
	case c.isInt:
		return x
	case c.fits:
		return jen.Int().Call(x)
	}
	return jen.Id(e.costFunc).Call(x)
}

// costValue returns the int that the runtime is given for cost c. A
// computed cost other than a plain int variable or field is stored in a
// local first, appended to body, because it is used twice: by
// runtime.CheckCost and by the call that asks the limiter.
func (e *emitter) costValue(c *costExpr, params []string, scope *names, body *[]jen.Code) jen.Code {
	x := e.costCode(c, params)
	if c.value != nil || c.plain && c.isInt {
		return x
	}
	name := scope.fresh("cost")
	*body = append(*body, jen.Id(name).Op(":=").Add(x))
	return jen.Id(name)
}

// checkCost returns the statement that refuses a computed cost that the
// limit held in variable lv can never admit, before the limiter is asked.
// The runtime would refuse most such costs itself, but a Request reads a
// Cost of 0 as 1 and would charge it, and a Limiter of the user's own need
// not check costs at all. The error, which wraps runtime.ErrCostExceedsMax,
// names the cost as computed (or clamped), and the wrapped method is not
// called.
func (e *emitter) checkCost(mc methodCall, lv string, cost jen.Code) jen.Code {
	errName := mc.scope.child().fresh("err")
	return jen.If(
		jen.Id(errName).Op(":=").Qual(RuntimePath, "CheckCost").Call(jen.Id(lv), cost),
		jen.Id(errName).Op("!=").Nil(),
	).Block(e.returnZero(mc.wm.sig, mc.scope, jen.Id(errName))...)
}

// integerTypes is the constraint of the cost conversions: every integer
// type.
func integerTypes() jen.Code {
	kinds := []func() *jen.Statement{jen.Int, jen.Int8, jen.Int16, jen.Int32, jen.Int64, jen.Uint, jen.Uint8, jen.Uint16, jen.Uint32, jen.Uint64, jen.Uintptr}
	terms := make([]jen.Code, len(kinds))
	for i, k := range kinds {
		terms[i] = jen.Op("~").Add(k())
	}
	return jen.Union(terms...)
}

// costFuncs emits the conversion of cost= values that the limits need.
// A plain int(x) would wrap a uint64 above math.MaxInt (or an int64 beyond
// a 32-bit int) around to a small, admissible cost; clamping keeps such a
// cost out of range, so that runtime.CheckCost refuses it with an error.
func (e *emitter) costFuncs() {
	if e.costFunc == "" {
		return
	}
	// The function's own names (T, n) cannot collide with the only other
	// name it uses, the math import, which is "math" or "math" and a
	// number.
	const n = "n"
	e.f.Line()
	e.comment(e.costFunc + " converts a cost= value to the int that the runtime takes. A value beyond int's range (a uint64 above math.MaxInt, an int64 beyond a 32-bit int) is clamped rather than wrapped around, so that it stays out of every limit's range and runtime.CheckCost reports it as an error instead of admitting a small cost.")
	e.f.Func().Id(e.costFunc).Types(jen.Id("T").Add(integerTypes())).Params(jen.Id(n).Id("T")).Int().Block(
		jen.If(jen.Id(n).Op("<").Lit(0)).Block(
			jen.If(jen.Int64().Call(jen.Id(n)).Op("<").Qual("math", "MinInt")).Block(jen.Return(jen.Qual("math", "MinInt"))),
			jen.Return(jen.Int().Call(jen.Id(n))),
		),
		jen.If(jen.Uint64().Call(jen.Id(n)).Op(">").Qual("math", "MaxInt")).Block(jen.Return(jen.Qual("math", "MaxInt"))),
		jen.Return(jen.Int().Call(jen.Id(n))),
	)
}
