package generate

import (
	"go/constant"
	"go/token"
	"go/types"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// A max= that is not an integer literal is an expression. A constant one
// that uses no parameter, such as max=defaultMax, is the limit's Max as a
// literal would be, checked the same way and spelt in the limit's variable.
// Any other is evaluated on every call, such as max=planLimit(ctx): the
// limit's variable is declared without a Max, and each call copies it and
// sets Max. Checks that need the max at generate time (a constant cost
// within the capacity, the window's bound, the sliding log's memory) are
// then left to the runtime, which validates every call: an invalid Max is
// an error from the limiter, not a panic.

// maxExpr is a type-checked max= expression: an integer, converted to int
// (Limit.Max's type) unless it is one already.
type maxExpr struct {
	checkedExpr
	// isInt is set when the expression is an int already (or an untyped
	// constant), so that it needs no conversion.
	isInt bool
}

// checkMax type-checks a max= expression. A constant must be a count that
// max= could hold as a literal. It reports problems to ds and returns nil
// if there are any.
func (es *exprScope) checkMax(e parse.Expr, ds *diagnostics) *maxExpr {
	ce := es.checkInteger(e, maxRole, ds)
	if ce == nil {
		return nil
	}
	if ce.value != nil {
		subject := "max " + ce.text
		if v := ce.value.ExactString(); v != ce.text {
			subject += " (" + v + ")"
		}
		v := constant.ToInt(ce.value)
		switch {
		case constant.Sign(v) <= 0:
			ds.errorf(e.Pos, "%s must be at least 1", subject)
			return nil
		case constant.Compare(v, token.GTR, constant.MakeInt64(math.MaxInt32)):
			ds.errorf(e.Pos, "%s is too large; it can be at most %d", subject, math.MaxInt32)
			return nil
		}
	}
	b, ok := types.Unalias(ce.typ).(*types.Basic)
	return &maxExpr{checkedExpr: *ce, isInt: ok && (b.Kind() == types.Int || b.Info()&types.IsUntyped != 0)}
}

// static returns the value of a constant max expression that uses no
// parameter, which is the same for every call.
func (m *maxExpr) static() (int, bool) {
	if m.value == nil || slices.ContainsFunc(m.refs, func(r exprRef) bool { return r.param >= 0 }) {
		return 0, false
	}
	n, exact := constant.Int64Val(constant.ToInt(m.value))
	return int(n), exact // checkMax bounds it
}

// perCallMax reports whether l's max is an expression computed by each
// call rather than a literal or a constant.
func (l *limit) perCallMax() bool { return l.maxText != "" && l.max == 0 }

// maxCode spells the max expression as an int.
func (e *emitter) maxCode(m *maxExpr, params []string) *jen.Statement {
	x := e.exprCode(&m.checkedExpr, params)
	if !m.isInt {
		x = jen.Int().Call(x)
	}
	return x
}

// limitLocalBase is the preferred name of the local copy of l that a call
// sets the Max of: limit for a method's first limit, else its name= in
// camel case (dailyLimit for Notifier.SendCode.daily).
func limitLocalBase(l *limit) string {
	if l.canonical != nil {
		l = l.canonical
	}
	suffix := limitVarSuffix(l)
	if suffix == "" || !unicode.IsLetter(rune(suffix[0])) {
		return "limit"
	}
	return strings.ToLower(suffix[:1]) + suffix[1:] + "Limit"
}

// limitValues returns the runtime.Limit of each limit ls[i] of mc for i in
// idx: its variable, or for a max computed per call a local copy whose Max
// the statements appended to body set.
func (e *emitter) limitValues(mc methodCall, scope *names, idx []int, body *[]jen.Code) map[int]jen.Code {
	out := map[int]jen.Code{}
	for _, i := range idx {
		l := mc.wm.limits[i]
		if !l.perCallMax() {
			out[i] = jen.Id(e.limitVar(l))
			continue
		}
		name := scope.fresh(limitLocalBase(l))
		*body = append(*body,
			jen.Id(name).Op(":=").Id(e.limitVar(l)),
			jen.Id(name).Dot("Max").Op("=").Add(e.maxCode(l.maxExpr, mc.params)),
		)
		out[i] = jen.Id(name)
	}
	return out
}
