package generate

import (
	"go/constant"
	"go/types"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// costExpr is a type-checked cost= expression: an integer. A Request's
// Cost is an int64, which every integer converts to exactly or, for an
// unsigned value above math.MaxInt64, as a negative number that the
// runtime refuses: never as a small cost that it would admit.
type costExpr struct {
	checkedExpr
	// isInt64 is set when the expression is an int64 already (or an
	// untyped constant), so that it needs no conversion.
	isInt64 bool
}

// exprs returns l's key parts, cost, max, refund and settle expressions.
func (l *limit) exprs() []*checkedExpr {
	var out []*checkedExpr
	for _, kp := range l.key {
		out = append(out, &kp.checkedExpr)
	}
	if l.cost != nil {
		out = append(out, &l.cost.checkedExpr)
	}
	if l.maxExpr != nil {
		out = append(out, &l.maxExpr.checkedExpr)
	}
	if l.refund != nil {
		out = append(out, l.refund)
	}
	if l.settle != nil {
		out = append(out, &l.settle.checkedExpr)
	}
	return out
}

// checkCost type-checks a cost= expression, which must be of an integer
// type. It reports problems to ds and returns nil if there are any.
func (es *exprScope) checkCost(e parse.Expr, ds *diagnostics) *costExpr {
	ce := es.checkInteger(e, costRole, ds)
	if ce == nil {
		return nil
	}
	return &costExpr{checkedExpr: *ce, isInt64: isInt64(ce.typ)}
}

// checkInteger type-checks an expression that must be of an integer type
// (a cost, a max). It reports problems to ds and returns nil if there are
// any.
func (es *exprScope) checkInteger(e parse.Expr, role exprRole, ds *diagnostics) *checkedExpr {
	ce, _ := es.check(e, role, ds)
	if ce == nil {
		return nil
	}
	if !isInteger(ce.typ) {
		ts := types.TypeString(ce.typ, types.RelativeTo(es.pkg))
		msg := role.what + " " + e.Text + " has type " + ts + ", but " + role.integer
		if _, ok := types.Unalias(ce.typ).(*types.TypeParam); ok {
			msg += "; a type parameter's constraint must admit integer types only"
		}
		ds.errorf(e.Pos, "%s", msg)
		return nil
	}
	return ce
}

// isInteger reports whether t is an integer type, or a type parameter all of
// whose types are.
func isInteger(t types.Type) bool {
	if tp, ok := types.Unalias(t).(*types.TypeParam); ok {
		terms, ok := typeSetTerms(tp.Constraint())
		if !ok || len(terms) == 0 {
			return false
		}
		for _, term := range terms {
			if !isInteger(term) {
				return false
			}
		}
		return true
	}
	b, ok := types.Unalias(t).Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// constantCost returns the value of a constant cost, if it is one and fits
// in an int64.
func (c *costExpr) constantCost() (int64, bool) {
	if c.value == nil {
		return 0, false
	}
	return constant.Int64Val(constant.ToInt(c.value))
}
