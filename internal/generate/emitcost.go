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

// costFuncsNeeded reports which of the generated cost conversions the
// package's limits call (see costFuncs).
func (e *emitter) costFuncsNeeded() (cost, request bool) {
	for _, l := range e.m.limits {
		switch c := l.cost; {
		case c == nil || c.value != nil:
			// No cost, or a constant checked at generate time.
		case l.multi:
			request = true
		case !c.isInt && !c.fits:
			cost = true
		}
	}
	return cost || request, request
}

// costCode spells the int the runtime is given for cost c: a constant as
// it is (checked against the limit's capacity at generate time); for
// runtime.AllowN, an int as it is and a small integer converted; anything
// else through the generated conversions.
func (e *emitter) costCode(c *costExpr, params []string, request bool) jen.Code {
	x := e.exprCode(&c.checkedExpr, params)
	switch {
	case c.value != nil && c.isInt:
		return x
	case c.value != nil:
		return jen.Int().Call(x)
	case request:
		return jen.Id(e.requestCostFunc).Call(x)
	case c.isInt:
		return x
	case c.fits:
		return jen.Int().Call(x)
	}
	return jen.Id(e.costFunc).Call(x)
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

// costFuncs emits the conversions of cost= values that the limits need.
// A plain int(x) would wrap a uint64 above math.MaxInt (or an int64 beyond
// a 32-bit int) around to a small, admissible cost; clamping keeps such a
// cost out of range, so that the runtime refuses it with an error. And a
// runtime.Request reads a Cost of 0 as 1, so a computed 0 is passed as -1
// there, for the runtime to refuse as runtime.AllowN refuses 0.
func (e *emitter) costFuncs() {
	if e.costFunc != "" {
		// The function's own names (T, n, c) cannot collide with the
		// only other name it uses, the math import, which is "math" or
		// "math" and a number.
		const n = "n"
		e.f.Line()
		e.comment(e.costFunc + " converts a cost= value to the int that the runtime takes. A value beyond int's range (a uint64 above math.MaxInt, an int64 beyond a 32-bit int) is clamped rather than wrapped around, so that it stays out of every limit's range and the runtime reports it as an error instead of admitting a small cost.")
		e.f.Func().Id(e.costFunc).Types(jen.Id("T").Add(integerTypes())).Params(jen.Id(n).Id("T")).Int().Block(
			jen.If(jen.Id(n).Op("<").Lit(0)).Block(
				jen.If(jen.Int64().Call(jen.Id(n)).Op("<").Qual("math", "MinInt")).Block(jen.Return(jen.Qual("math", "MinInt"))),
				jen.Return(jen.Int().Call(jen.Id(n))),
			),
			jen.If(jen.Uint64().Call(jen.Id(n)).Op(">").Qual("math", "MaxInt")).Block(jen.Return(jen.Qual("math", "MaxInt"))),
			jen.Return(jen.Int().Call(jen.Id(n))),
		)
	}
	if e.requestCostFunc != "" {
		const n, c = "n", "c"
		e.f.Line()
		e.comment(e.requestCostFunc + " is " + e.costFunc + " for the Cost of a runtime.Request, which reads 0 as 1: a cost of 0 becomes -1, which the runtime refuses with an error, as runtime.AllowN refuses a cost of 0.")
		e.f.Func().Id(e.requestCostFunc).Types(jen.Id("T").Add(integerTypes())).Params(jen.Id(n).Id("T")).Int().Block(
			jen.If(jen.Id(c).Op(":=").Id(e.costFunc).Call(jen.Id(n)), jen.Id(c).Op("!=").Lit(0)).Block(jen.Return(jen.Id(c))),
			jen.Return(jen.Lit(-1)),
		)
	}
}
