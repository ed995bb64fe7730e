package generate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// methodCall is what the body of one rate-limited method is made of.
type methodCall struct {
	w     *wrapper
	wm    *wrapperMethod
	id    wrapperIdents
	scope *names
	// params are the parameters' names in the wrapper.
	params []string
	// ctx is the context passed to the limiter.
	ctx jen.Code
	// forward is the statement that calls the wrapped method.
	forward jen.Code
}

// singleLimit emits the body of a method with one limit: Limiter.Allow,
// or runtime.AllowN with a cost, then the call.
func (e *emitter) singleLimit(mc methodCall) []jen.Code {
	l := mc.wm.limits[0]
	lv := e.limitVars[l]
	doc := fmt.Sprintf("%s calls the wrapped %s's %s if the limit %s, admits the call. Otherwise it returns a *runtime.LimitError, or the limiter's error if the limiter could not decide.",
		mc.wm.name, mc.w.owner.Name(), mc.wm.name, limitWords(l))
	if computedCost(l) {
		doc += " A cost below 1 or above the limit's capacity is an error wrapping runtime.ErrCostExceedsMax, and the limiter is not asked."
	}
	e.comment(doc)

	var body []jen.Code
	key := e.keyCode(l.key, mc.params, mc.scope, &body)
	var ask jen.Code
	if l.cost == nil {
		ask = jen.Id(mc.id.recv).Dot(mc.id.limiter).Dot("Allow").Call(mc.ctx, jen.Id(lv), key)
	} else {
		cost := e.costValue(l.cost, mc.params, mc.scope, &body)
		if computedCost(l) {
			body = append(body, e.checkCost(mc, lv, cost))
		}
		ask = jen.Qual(RuntimePath, "AllowN").Call(mc.ctx, jen.Id(mc.id.recv).Dot(mc.id.limiter), jen.Id(lv), key, cost)
	}
	d, errName := mc.scope.fresh("d"), mc.scope.fresh("err")
	sig := mc.wm.sig
	return append(body,
		jen.List(jen.Id(d), jen.Id(errName)).Op(":=").Add(ask),
		jen.If(jen.Id(errName).Op("!=").Nil()).Block(e.returnZero(sig, mc.scope, jen.Id(errName))...),
		jen.If(jen.Op("!").Id(d).Dot("Allowed")).Block(e.returnZero(sig, mc.scope, jen.Qual(RuntimePath, "NewLimitError").Call(jen.Id(lv), jen.Id(d)))...),
		mc.forward,
	)
}

// multiLimit emits the body of a method with several limits: one
// runtime.AllowAll over an array of requests, which admits the call in
// every limit or in none.
func (e *emitter) multiLimit(mc methodCall) []jen.Code {
	ls := mc.wm.limits
	words := make([]string, len(ls))
	for i, l := range ls {
		words[i] = limitWords(l)
	}
	doc := fmt.Sprintf("%s calls the wrapped %s's %s if every one of its limits admits the call: %s. When one of them denies the call, none of them counts it, and %s returns a *runtime.LimitError naming the limit with the longest wait. It returns the limiter's error if the limiter could not decide.",
		mc.wm.name, mc.w.owner.Name(), mc.wm.name, strings.Join(words, "; "), mc.wm.name)
	if slices.ContainsFunc(ls, computedCost) {
		doc += " A cost below 1 or above its limit's capacity is an error wrapping runtime.ErrCostExceedsMax, and the limiter is not asked."
	}
	e.comment(doc)

	var body []jen.Code
	// A key shared by several limits is computed once, unless it is a
	// plain string variable or field.
	uses := map[string]int{}
	for _, l := range ls {
		uses[keyText(l.key)]++
	}
	shared := map[string]jen.Code{}
	keys := make([]jen.Code, len(ls))
	for i, l := range ls {
		text := keyText(l.key)
		if k, ok := shared[text]; ok {
			keys[i] = k
			continue
		}
		keys[i] = e.keyCode(l.key, mc.params, mc.scope, &body)
		if uses[text] > 1 && len(l.key) > 0 && !(len(l.key) == 1 && l.key[0].plain && l.key[0].kind == keyString) {
			name := mc.scope.fresh("key")
			body = append(body, jen.Id(name).Op(":=").Add(keys[i]))
			keys[i] = jen.Id(name)
			shared[text] = keys[i]
		}
	}

	// So is a computed cost, which is checked against each of its limits
	// before the limiter is asked.
	sharedCost := map[string]jen.Code{}
	costs := make([]jen.Code, len(ls))
	var checks []jen.Code
	for i, l := range ls {
		if l.cost == nil {
			continue
		}
		c, ok := sharedCost[l.cost.text]
		if !ok {
			c = e.costValue(l.cost, mc.params, mc.scope, &body)
			sharedCost[l.cost.text] = c
		}
		costs[i] = c
		if computedCost(l) {
			checks = append(checks, e.checkCost(mc, e.limitVars[l], c))
		}
	}
	body = append(body, checks...)

	reqs, ds, errName := mc.scope.fresh("reqs"), mc.scope.fresh("ds"), mc.scope.fresh("err")
	elems := make([]jen.Code, 0, len(ls)+1)
	for i, l := range ls {
		fields := []jen.Code{
			jen.Id("Limit").Op(":").Id(e.limitVars[l]),
			jen.Id("Key").Op(":").Add(keys[i]),
		}
		if l.cost != nil {
			fields = append(fields, jen.Id("Cost").Op(":").Add(costs[i]))
		}
		elems = append(elems, jen.Line().Values(fields...))
	}
	elems = append(elems, jen.Line())
	all := jen.Id(reqs).Index(jen.Empty(), jen.Empty())
	sig := mc.wm.sig
	return append(body,
		// One array, sliced for both calls. It escapes through the
		// runtime's interface call: one allocation per call (160 B for
		// two limits), measured by the e2e benchmarks.
		jen.Id(reqs).Op(":=").Index(jen.Op("...")).Qual(RuntimePath, "Request").Values(elems...),
		jen.List(jen.Id(ds), jen.Id(errName)).Op(":=").Qual(RuntimePath, "AllowAll").Call(mc.ctx, jen.Id(mc.id.recv).Dot(mc.id.limiter), all.Clone().Op("...")),
		jen.If(jen.Id(errName).Op("!=").Nil()).Block(e.returnZero(sig, mc.scope, jen.Id(errName))...),
		jen.If(jen.Op("!").Id(ds).Dot("Allowed")).Block(e.returnZero(sig, mc.scope, jen.Id(ds).Dot("LimitError").Call(all.Clone()))...),
		mc.forward,
	)
}

// computedCost reports whether l has a cost that is known only at run
// time, which the generated code checks with runtime.CheckCost.
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

// limitWords describes a limit for doc comments: its name, rate, key,
// algorithm and cost.
func limitWords(l *limit) string {
	units := "calls"
	switch {
	case l.cost != nil:
		units = "units"
	case l.max == 1:
		units = "call"
	}
	s := fmt.Sprintf("%q, %d %s %s %s", l.name, l.max, units, windowWords(l.window), keyWords(l.key))
	if a := l.algorithm(); a != parse.DefaultAlgorithm {
		s += " (" + a
		if l.burst > 0 {
			s += ", burst " + strconv.Itoa(l.burst)
		}
		s += ")"
	}
	if l.cost != nil {
		s += ", a call costing " + l.cost.text + " units"
	}
	return s
}
