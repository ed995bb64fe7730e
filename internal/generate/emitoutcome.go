package generate

import (
	"go/constant"
	"go/types"

	"github.com/dave/jennifer/jen"
)

// outcomeBody returns the whole body of a method with a limit settled by
// its outcome (refund= or settle=): runtime.Admit in place of Enforce
// (runtime.AdmitWait in place of Wait with wait=), the call to the
// wrapped method with its results kept, the settlement, and the return.
// A method panicking, or returning an error where settle= needs its
// results, keeps its reservation: nothing is settled.
//
// The model allows it for a method of one limit, or of limits whose costs
// are constants (see checkOutcomeLimits), so each limit's reservation is
// known where the call is settled.
func (e *emitter) outcomeBody(mc methodCall, call *jen.Statement) []jen.Code {
	ls := mc.wm.limits
	sig := mc.wm.sig
	scope := mc.scope
	hold := scope.fresh("hold")

	// The results, as the outcome expressions name them; named once the
	// names of the admission are chosen, which then need not avoid them.
	var vars []string

	var body []jen.Code
	all := make([]int, len(ls))
	for i := range all {
		all[i] = i
	}
	guarded := len(ls) == 1 && computedCost(ls[0])
	if guarded {
		// A call of cost 0 is not limited, and has nothing to settle.
		inner := scope.child()
		test, cost := e.costTest(mc, ls[0].cost, inner)
		var block []jen.Code
		lims := e.limitValues(mc, inner, all, &block)
		keys := e.keys(mc, inner, all, &block)
		h, admitErr := inner.fresh("h"), inner.fresh("err")
		block = append(block,
			jen.List(jen.Id(h), jen.Id(admitErr)).Op(":=").Add(e.admit(mc, e.request(lims[0], keys[0], cost))),
			jen.If(jen.Id(admitErr).Op("!=").Nil()).Block(e.returnZero(sig, inner, jen.Id(admitErr))...),
			jen.Id(hold).Op("=").Id(h),
		)
		body = append(body,
			jen.Var().Id(hold).Qual(RuntimePath, "Hold"),
			jen.If(test...).Block(block...),
		)
		vars = resultVars(scope, sig)
	} else {
		vars = resultVars(scope, sig)
		body = e.admitAll(mc, hold, vars[len(vars)-1])
	}

	errVar := vars[len(vars)-1]
	refs := append(append([]string(nil), mc.params...), vars...)
	assign, results := callInto(vars, call, !guarded)
	body = append(body, assign)

	settle := func(used jen.Code) jen.Code {
		return jen.Id("_").Op("=").Id(hold).Dot("Settle").Call(mc.ctx, used)
	}
	var settlement []jen.Code
	if len(ls) == 1 {
		settlement = []jen.Code{e.outcomeIf(ls[0], refs, errVar, settle)}
	} else {
		used := scope.fresh("used")
		settlement = append(settlement, jen.Id(used).Op(":=").Index(jen.Lit(len(ls))).Int64().Values(reservations(ls)...))
		settlement = append(settlement, e.outcomes(ls, used, refs, errVar)...)
		settlement = append(settlement, settle(jen.Id(used).Index(jen.Op(":")).Op("...")))
	}
	if guarded {
		settlement = []jen.Code{jen.If(jen.Id(hold).Op("!=").Nil()).Block(settlement...)}
	}
	body = append(body, settlement...)
	return append(body, jen.Return(results...))
}

// resultVars names the results of sig in scope as the outcome expressions
// name them (see resultNames), res for one they cannot name.
func resultVars(scope *names, sig *types.Signature) []string {
	var vars []string
	for _, name := range resultNames(sig) {
		if name == "" {
			name = "res"
		}
		vars = append(vars, scope.fresh(name))
	}
	return vars
}

// admitAll returns the statements that admit a call of mc under all its
// limits, each at its constant cost, into hold and errVar, and return
// errVar when it is not nil.
func (e *emitter) admitAll(mc methodCall, hold, errVar string) []jen.Code {
	ls := mc.wm.limits
	all := make([]int, len(ls))
	for i := range all {
		all[i] = i
	}
	var body []jen.Code
	lims := e.limitValues(mc, mc.scope, all, &body)
	keys := e.keys(mc, mc.scope, all, &body)
	reqs := make([]jen.Code, len(ls))
	for i, l := range ls {
		reqs[i] = e.request(lims[i], keys[i], e.constantCost(l.cost, mc.params))
	}
	return append(body,
		jen.List(jen.Id(hold), jen.Id(errVar)).Op(":=").Add(e.admit(mc, reqs...)),
		jen.If(jen.Id(errVar).Op("!=").Nil()).Block(e.returnZero(mc.wm.sig, mc.scope, jen.Id(errVar))...),
	)
}

// callInto returns the statement that calls the wrapped method into
// vars, the results, and the results as expressions. errDeclared says
// that the last, the error, is declared already (by admitAll).
func callInto(vars []string, call jen.Code, errDeclared bool) (jen.Code, []jen.Code) {
	results := make([]jen.Code, len(vars))
	for i, v := range vars {
		results[i] = jen.Id(v)
	}
	declare := ":="
	if errDeclared && len(vars) == 1 {
		declare = "="
	}
	return jen.List(results...).Op(declare).Add(call), results
}

// reservations spells what each limit of ls reserved for a call, its
// constant cost or 1, as the units it counts unless its outcome says
// otherwise; a concurrency limit's permit is 1.
func reservations(ls []*limit) []jen.Code {
	costs := make([]jen.Code, len(ls))
	for i, l := range ls {
		costs[i] = jen.Lit(1)
		if l.cost != nil {
			n, _ := constant.Int64Val(constant.ToInt(l.cost.value))
			costs[i] = jen.Lit(int(n))
		}
	}
	return costs
}

// outcomes returns the statements that set used[i], the units the i-th
// limit of ls counts, from its refund= or settle= once the call has
// returned.
func (e *emitter) outcomes(ls []*limit, used string, refs []string, errVar string) []jen.Code {
	var stmts []jen.Code
	for i, l := range ls {
		if l.hasOutcome() {
			stmts = append(stmts, e.outcomeIf(l, refs, errVar, func(u jen.Code) jen.Code {
				return jen.Id(used).Index(jen.Lit(i)).Op("=").Add(u)
			}))
		}
	}
	return stmts
}

// admit spells the runtime.Admit call of mc for reqs, or
// runtime.AdmitWait with the method's wait= when it has one.
func (e *emitter) admit(mc methodCall, reqs ...jen.Code) *jen.Statement {
	fn := "Admit"
	args := []jen.Code{mc.ctx, jen.Id(mc.recv).Dot(mc.id.limiter)}
	if w := methodWait(mc.wm); w > 0 {
		fn = "AdmitWait"
		args = append(args, durationCode(w))
	}
	if len(reqs) > 1 {
		for _, r := range reqs {
			args = append(args, jen.Line().Add(r))
		}
		args = append(args, jen.Line())
	} else {
		args = append(args, reqs...)
	}
	return jen.Qual(RuntimePath, fn).Call(args...)
}

// outcomeIf returns the statement that settles l's outcome through set,
// given the units the call counts: 0 when refund= holds, settle= when the
// call returned no error.
func (e *emitter) outcomeIf(l *limit, refs []string, errVar string, set func(used jen.Code) jen.Code) jen.Code {
	var settled jen.Code
	if l.settle != nil {
		x := e.exprCode(&l.settle.checkedExpr, refs)
		if !l.settle.isInt64 {
			x = jen.Int64().Call(x)
		}
		settled = jen.If(jen.Id(errVar).Op("==").Nil()).Block(set(x))
	}
	if l.refund == nil {
		return settled
	}
	refunded := jen.If(e.exprCode(l.refund, refs)).Block(set(jen.Lit(0)))
	if settled != nil {
		refunded.Else().Add(settled)
	}
	return refunded
}
