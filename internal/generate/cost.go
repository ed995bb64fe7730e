package generate

import (
	"go/constant"
	"go/types"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// costExpr is a type-checked cost= expression: an integer.
type costExpr struct {
	checkedExpr
	// isInt is set when the expression is an int already (or an untyped
	// constant), so that it needs no conversion.
	isInt bool
	// fits is set when int(x) is exact on every platform: the type is an
	// integer of at most 32 bits, or 16 if unsigned.
	fits bool
}

// checkCost type-checks a cost= expression, which must be of an integer
// type. It reports problems to ds and returns nil if there are any.
func (es *exprScope) checkCost(e parse.Expr, ds *diagnostics) *costExpr {
	ce, _ := es.check(e, costRole, ds)
	if ce == nil {
		return nil
	}
	if !isInteger(ce.typ) {
		ts := types.TypeString(ce.typ, types.RelativeTo(es.pkg))
		msg := "cost " + e.Text + " has type " + ts + ", but a cost must be an integer: the number of units the call uses, e.g. cost=len(req.Items)"
		if _, ok := types.Unalias(ce.typ).(*types.TypeParam); ok {
			msg += "; a type parameter's constraint must admit integer types only"
		}
		ds.errorf(e.Pos, "%s", msg)
		return nil
	}
	b, basic := types.Unalias(ce.typ).(*types.Basic)
	isInt := types.Identical(ce.typ, types.Typ[types.Int]) || basic && b.Info()&types.IsUntyped != 0
	fits := false
	if u, ok := types.Unalias(ce.typ).Underlying().(*types.Basic); ok {
		switch u.Kind() {
		case types.Int8, types.Int16, types.Int32, types.Uint8, types.Uint16:
			fits = true
		}
	}
	return &costExpr{checkedExpr: *ce, isInt: isInt, fits: fits}
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
