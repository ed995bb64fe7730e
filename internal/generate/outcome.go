package generate

import (
	"go/token"
	"go/types"
	"slices"
	"strconv"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A limit's outcome options, refund= and settle=, are expressions over the
// method's results, which the wrapper evaluates once the wrapped method
// returns: refund= a condition on which the call's units are given back,
// settle= the units the call counts in place of its cost.

var (
	refundRole = exprRole{what: "refund condition", option: "refund", example: "refund=err == nil"}
	settleRole = exprRole{what: "settle", option: "settle", example: "settle=resp.Usage.TotalTokens", integer: "settle= must be an integer: the units the call used, e.g. settle=resp.Usage.TotalTokens"}
)

// resultNames returns the names by which outcome expressions refer to the
// results of sig, whose last result is an error: a named result by its
// name ("" for _, which no expression can name); unnamed results as
// err for the last, resp for the one before it when there is no other,
// and resp1, resp2, ... in order otherwise.
func resultNames(sig *types.Signature) []string {
	rs := sig.Results()
	names := make([]string, rs.Len())
	for i := range names {
		switch name := rs.At(i).Name(); {
		case name == "_":
		case name != "":
			names[i] = name
		case i == rs.Len()-1:
			names[i] = "err"
		case rs.Len() == 2:
			names[i] = "resp"
		default:
			names[i] = "resp" + strconv.Itoa(i+1)
		}
	}
	return names
}

// outcomeScope returns the scope of a directive's outcome expressions: es,
// with the method's results declared by resultNames. A result named like
// a parameter is reported at pos, and outcomeScope returns nil.
func (es *exprScope) outcomeScope(sig *types.Signature, pos token.Position, ds *diagnostics) *exprScope {
	names := resultNames(sig)
	out := *es
	out.scope = types.NewScope(es.scope, es.scope.Pos(), es.scope.End(), "ratelimit outcome")
	out.params = make(map[*types.Var]int, len(es.params)+len(names))
	for v, i := range es.params {
		out.params[v] = i
	}
	n := sig.Params().Len()
	for i, name := range names {
		if name == "" {
			continue
		}
		if es.scope.Lookup(name) != nil {
			ds.errorf(pos, "the method's result %s has the name of a parameter, so refund= and settle= cannot tell them apart; name the results, e.g. (resp *Response, err error)", name)
			return nil
		}
		v := types.NewParam(token.NoPos, es.pkg, name, sig.Results().At(i).Type())
		out.scope.Insert(v)
		out.params[v] = n + i
		out.results = append(out.results, name)
	}
	return &out
}

// checkOutcome type-checks the refund= and settle= expressions of d and
// sets them on l. It reports problems to ds and returns false if there
// are any.
func (es *exprScope) checkOutcome(d *parse.Directive, sig *types.Signature, l *limit, ds *diagnostics) bool {
	pos := d.Pos
	if d.Refund != nil {
		pos = d.Refund.Pos
	} else if d.Settle != nil {
		pos = d.Settle.Pos
	}
	os := es.outcomeScope(sig, pos, ds)
	if os == nil {
		return false
	}
	ok := true
	if d.Refund != nil {
		ce, _ := os.check(*d.Refund, refundRole, ds)
		switch {
		case ce == nil:
			ok = false
		case !isBoolean(ce.typ):
			ds.errorf(d.Refund.Pos, "refund condition %s has type %s, but refund= needs a condition: when it holds, the call gives its units back, e.g. refund=err == nil", d.Refund.Text, types.TypeString(ce.typ, types.RelativeTo(es.pkg)))
			ok = false
		default:
			l.refund = ce
		}
	}
	if d.Settle != nil {
		ce := os.checkInteger(*d.Settle, settleRole, ds)
		if ce == nil {
			ok = false
		} else {
			l.settle = &costExpr{checkedExpr: *ce, isInt64: isInt64(ce.typ)}
		}
	}
	return ok
}

// isBoolean reports whether t is a boolean type.
func isBoolean(t types.Type) bool {
	b, ok := types.Unalias(t).Underlying().(*types.Basic)
	return ok && b.Info()&types.IsBoolean != 0
}

// hasOutcome reports whether l is settled once its call returns.
func (l *limit) hasOutcome() bool { return l.refund != nil || l.settle != nil }

// settled reports whether a call of wm is settled once it returns.
func settled(wm *wrapperMethod) bool {
	for _, l := range wm.limits {
		if l.hasOutcome() {
			return true
		}
	}
	return false
}

// checkOutcomeLimits reports the limits of one method that a limit
// settled once its call returns (refund=, settle=, or a concurrency
// limit, whose permit is released then) cannot be combined with: beside
// other limits, a cost computed per call, which may leave a limit out of
// the call. It returns false if there are any.
func checkOutcomeLimits(ls []*limit, ds *diagnostics) bool {
	// The first limit with an outcome, else the first concurrency limit.
	var with *limit
	for _, l := range ls {
		if l.hasOutcome() && (with == nil || !with.hasOutcome()) || l.concurrency() && with == nil {
			with = l
		}
	}
	if with == nil || len(ls) == 1 {
		return true
	}
	option, apart := "one has refund= or settle=", "the limit settled by its outcome"
	if !with.hasOutcome() {
		option, apart = "one is a concurrency limit", "the rate limit"
	}
	for _, l := range ls {
		if computedCost(l) {
			ds.errorf(l.pos, "cost %s is computed per call, but the method has several limits and %s: give each limit a constant cost, or put %s on a method of its own", l.cost.text, option, apart)
			return false
		}
	}
	return true
}

// concurrency reports whether l limits calls in flight (concurrency=): a
// call holds one permit of it until it returns.
func (l *limit) concurrency() bool { return l.algo == runtime.Concurrency }

// holdsPermit reports whether a call of wm holds a permit while it runs.
func holdsPermit(wm *wrapperMethod) bool { return slices.ContainsFunc(wm.limits, (*limit).concurrency) }
