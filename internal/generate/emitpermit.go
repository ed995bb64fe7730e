package generate

import (
	"github.com/dave/jennifer/jen"
)

// permitBody returns the whole body of a method with a concurrency limit:
// one runtime.Admit over all its limits (runtime.AdmitWait with wait=,
// which waits for the permit in its turn), runtime.Keep to renew the permit
// while the wrapped method runs with Keep's context, and a deferred
// Settle that releases the permit however the method ends, a panic
// included. The deferred Settle gives each rate limit its reservation
// (which changes nothing) unless its refund= or settle= says otherwise
// once the method has returned: a method that panics keeps its rate
// limits' reservations, as it does without a concurrency limit.
//
// The model allows it for limits whose costs are constants (see
// checkOutcomeLimits), so each limit's reservation is known where the
// call is settled.
func (e *emitter) permitBody(mc methodCall) []jen.Code {
	ls := mc.wm.limits
	sig := mc.wm.sig
	scope := mc.scope
	var body []jen.Code
	if !hasContextParam(sig) {
		// The context of a stream or of none is asked for once, for the
		// admission, Keep and the release.
		ctx := scope.fresh("ctx")
		body = append(body, jen.Id(ctx).Op(":=").Add(mc.ctx))
		mc.ctx = jen.Id(ctx)
	}
	hold := scope.fresh("hold")
	vars := resultVars(scope, sig)
	errVar := vars[len(vars)-1]
	body = append(body, e.admitAll(mc, hold, errVar)...)

	// What the deferred Settle gives each limit: the reservations, in an
	// array that the outcomes overwrite once the method has returned.
	outcome := settled(mc.wm)
	used := reservations(ls)
	var usedVar string
	if outcome {
		usedVar = scope.fresh("used")
		body = append(body, jen.Id(usedVar).Op(":=").Index(jen.Lit(len(ls))).Int64().Values(used...))
		used = []jen.Code{jen.Id(usedVar).Index(jen.Op(":")).Op("...")}
	}

	// A method without a context parameter cannot be told that its permit
	// was lost; Keep still renews it while the method runs.
	kept := "_"
	var callCtx jen.Code
	if hasContextParam(sig) {
		kept = scope.fresh("callCtx")
		callCtx = jen.Id(kept)
	}
	stop := scope.fresh("stop")
	body = append(body,
		jen.List(jen.Id(kept), jen.Id(stop)).Op(":=").Qual(RuntimePath, "Keep").Call(mc.ctx, jen.Id(hold)),
		jen.Defer().Func().Params().Block(
			jen.Id(stop).Call(),
			jen.Id("_").Op("=").Id(hold).Dot("Settle").Call(append([]jen.Code{mc.ctx}, used...)...),
		).Call(),
	)
	call := mc.callWith(callCtx)
	if !outcome {
		return append(body, jen.Return(call))
	}

	assign, results := callInto(vars, call, true)
	body = append(body, assign)
	refs := append(append([]string(nil), mc.params...), vars...)
	body = append(body, e.outcomes(ls, usedVar, refs, errVar)...)
	return append(body, jen.Return(results...))
}
