package generate

import (
	"go/constant"
	"go/token"
	"go/types"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"
)

// methodCall is what the body of one rate-limited method is made of.
type methodCall struct {
	wm   *wrapperMethod
	recv string
	id   wrapperIdents
	// scope holds the method's names.
	scope *names
	// params are the parameters' names in the wrapper.
	params []string
	// ctx is the context passed to the limiter.
	ctx jen.Code
	// callWith spells the call of the wrapped method, with ctx in place
	// of its context parameter when ctx is not nil.
	callWith func(ctx jen.Code) *jen.Statement
}

// costGroup is the limits of a method whose cost is computed by one
// expression: a cost of 0 leaves all of them out of the decision.
type costGroup struct {
	cost   *costExpr
	limits []int
}

// limitedBody returns the statements that ask the limiter before the call
// is forwarded: one runtime.Enforce (runtime.Wait with wait=) over the
// method's requests, which admits the call in every limit or in none. A
// limit whose computed cost is 0 is left out of it (the runtime reads a
// Request's Cost of 0 as 1); a call all of whose limits are left out is
// forwarded without asking the limiter.
func (e *emitter) limitedBody(mc methodCall) []jen.Code {
	ls := mc.wm.limits
	var static []int
	var groups []*costGroup
	for i, l := range ls {
		if !computedCost(l) {
			static = append(static, i)
			continue
		}
		found := false
		for _, g := range groups {
			if g.cost.text == l.cost.text {
				g.limits = append(g.limits, i)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, &costGroup{cost: l.cost, limits: []int{i}})
		}
	}

	var body []jen.Code
	switch {
	case len(groups) == 0:
		lims := e.limitValues(mc, mc.scope, static, &body)
		keys := e.keys(mc, mc.scope, static, &body)
		reqs := make([]jen.Code, len(static))
		for j, i := range static {
			reqs[j] = e.request(lims[i], keys[i], e.constantCost(ls[i].cost, mc.params))
		}
		return append(body, e.enforce(mc, mc.scope, reqs...))

	case len(static) == 0 && len(groups) == 1:
		// Every limit has the same computed cost: a call that costs
		// nothing needs neither the limiter nor its keys.
		g := groups[0]
		scope := mc.scope.child()
		test, cost := e.costTest(mc, g.cost, scope)
		var inner []jen.Code
		lims := e.limitValues(mc, scope, g.limits, &inner)
		keys := e.keys(mc, scope, g.limits, &inner)
		reqs := make([]jen.Code, len(g.limits))
		for j, i := range g.limits {
			reqs[j] = e.request(lims[i], keys[i], cost)
		}
		inner = append(inner, e.enforce(mc, scope, reqs...))
		return append(body, jen.If(test...).Block(inner...))
	}

	// Several costs, or computed and fixed ones: the requests are
	// collected in a slice, with those of a cost of 0 left out.
	all := make([]int, len(ls))
	for i := range all {
		all[i] = i
	}
	lims := e.limitValues(mc, mc.scope, static, &body)
	keys := e.keys(mc, mc.scope, all, &body)
	reqs := mc.scope.fresh("reqs")
	if len(static) == 0 {
		body = append(body, jen.Var().Id(reqs).Index().Qual(RuntimePath, "Request"))
	} else {
		elems := make([]jen.Code, 0, len(static)+1)
		for _, i := range static {
			elems = append(elems, jen.Line().Values(e.requestFields(lims[i], keys[i], e.constantCost(ls[i].cost, mc.params))...))
		}
		elems = append(elems, jen.Line())
		body = append(body, jen.Id(reqs).Op(":=").Index().Qual(RuntimePath, "Request").Values(elems...))
	}
	for _, g := range groups {
		scope := mc.scope.child()
		test, cost := e.costTest(mc, g.cost, scope)
		var inner []jen.Code
		glims := e.limitValues(mc, scope, g.limits, &inner)
		args := []jen.Code{jen.Id(reqs)}
		for _, i := range g.limits {
			args = append(args, e.request(glims[i], keys[i], cost))
		}
		inner = append(inner, jen.Id(reqs).Op("=").Append(args...))
		body = append(body, jen.If(test...).Block(inner...))
	}
	return append(body, e.enforce(mc, mc.scope, jen.Id(reqs).Op("...")))
}

// enforce returns the statement that asks the limiter about reqs and
// returns the denial or the limiter's error, if any.
func (e *emitter) enforce(mc methodCall, scope *names, reqs ...jen.Code) jen.Code {
	local := scope.child()
	errName := local.fresh("err")
	fn := "Enforce"
	args := []jen.Code{mc.ctx, jen.Id(mc.recv).Dot(mc.id.limiter)}
	if w := methodWait(mc.wm); w > 0 {
		fn = "Wait"
		args = append(args, durationCode(w))
	}
	if len(reqs) > 1 {
		// One request per line.
		for _, r := range reqs {
			args = append(args, jen.Line().Add(r))
		}
		args = append(args, jen.Line())
	} else {
		args = append(args, reqs...)
	}
	return jen.If(
		jen.Id(errName).Op(":=").Qual(RuntimePath, fn).Call(args...),
		jen.Id(errName).Op("!=").Nil(),
	).Block(e.returnZero(mc.wm.sig, local, jen.Id(errName))...)
}

// request spells one runtime.Request.
func (e *emitter) request(lim, key, cost jen.Code) jen.Code {
	return jen.Qual(RuntimePath, "Request").Values(e.requestFields(lim, key, cost)...)
}

// requestFields spells the fields of a Request for the limit lim (see
// limitValues), leaving out a key or cost that is nil (no key, or a cost of
// 1).
func (e *emitter) requestFields(lim, key, cost jen.Code) []jen.Code {
	fs := []jen.Code{jen.Id("Limit").Op(":").Add(lim)}
	if key != nil {
		fs = append(fs, jen.Id("Key").Op(":").Add(key))
	}
	if cost != nil {
		fs = append(fs, jen.Id("Cost").Op(":").Add(cost))
	}
	return fs
}

// keys returns the key of each limit ls[i] of mc for i in idx, nil for
// none, appending to body the statements that compute them. A key that
// several of them share is computed once, unless it is a plain string
// variable or field.
func (e *emitter) keys(mc methodCall, scope *names, idx []int, body *[]jen.Code) map[int]jen.Code {
	ls := mc.wm.limits
	uses := map[string]int{}
	for _, i := range idx {
		uses[keyText(ls[i].key)]++
	}
	shared := map[string]jen.Code{}
	keys := map[int]jen.Code{}
	for _, i := range idx {
		l := ls[i]
		text := keyText(l.key)
		if k, ok := shared[text]; ok {
			keys[i] = k
			continue
		}
		keys[i] = e.keyCode(l.key, mc.params, scope, body)
		if uses[text] > 1 && len(l.key) > 0 && !(len(l.key) == 1 && l.key[0].plain && l.key[0].kind == keyString) {
			name := scope.fresh("key")
			*body = append(*body, jen.Id(name).Op(":=").Add(keys[i]))
			keys[i] = jen.Id(name)
		}
		shared[text] = keys[i]
	}
	return keys
}

// costTest returns the init and condition of the if statement that runs
// only for a computed cost c other than 0, and the int64 cost they
// leave in scope: "cost := int64(len(items)); cost != 0" and cost, or
// "units != 0" and units for a plain int64.
func (e *emitter) costTest(mc methodCall, c *costExpr, scope *names) ([]jen.Code, jen.Code) {
	x := e.exprCode(&c.checkedExpr, mc.params)
	if c.plain && c.isInt64 {
		return []jen.Code{x.Clone().Op("!=").Lit(0)}, x
	}
	if !c.isInt64 {
		x = jen.Int64().Call(x)
	}
	name := scope.fresh("cost")
	return []jen.Code{jen.Id(name).Op(":=").Add(x), jen.Id(name).Op("!=").Lit(0)}, jen.Id(name)
}

// constantCost spells a constant cost as a Request's Cost, or returns nil
// for none or a cost of 1.
func (e *emitter) constantCost(c *costExpr, params []string) jen.Code {
	if c == nil || constant.Compare(constant.ToInt(c.value), token.EQL, constant.MakeInt64(1)) {
		return nil
	}
	x := e.exprCode(&c.checkedExpr, params)
	if c.isInt64 {
		return x
	}
	return jen.Int64().Call(x)
}

// computedCost reports whether l has a cost that is known only at run
// time.
func computedCost(l *limit) bool {
	return l.cost != nil && l.cost.value == nil
}

// keyText identifies a key by its parts as written.
func keyText(key []*keyPart) string {
	texts := make([]string, len(key))
	for i, kp := range key {
		texts[i] = kp.text
	}
	return strings.Join(texts, "\x00")
}

// methodWait is how long a call of the method may wait for room: the
// longest wait= of its limits, or 0.
func methodWait(wm *wrapperMethod) time.Duration {
	var w time.Duration
	for _, l := range wm.limits {
		w = max(w, l.wait)
	}
	return w
}

// isInt64 reports whether t is int64 itself or an untyped constant's
// type, which converts to it implicitly.
func isInt64(t types.Type) bool {
	b, ok := types.Unalias(t).(*types.Basic)
	return ok && (b.Kind() == types.Int64 || b.Info()&types.IsUntyped != 0)
}
