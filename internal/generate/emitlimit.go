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
	lv := e.limitVar(l)
	doc := fmt.Sprintf("%s calls the wrapped %s's %s if the limit %s, admits the call. Otherwise it returns a *runtime.LimitError, or the limiter's error if the limiter could not decide.",
		mc.wm.name, mc.w.owner.Name(), mc.wm.name, limitWords(l))
	if computedCost(l) {
		doc += " A cost of 0 admits the call without asking the limiter, which records nothing. A negative cost or one above the limit's capacity is an error wrapping runtime.ErrCostExceedsMax, and the limiter is not asked."
	}
	e.comment(doc + waitDoc(mc.wm))

	// The cost comes first: a call that costs nothing needs no key.
	var body []jen.Code
	var cost jen.Code
	if l.cost != nil {
		cost = e.costValue(l.cost, mc.params, mc.scope, &body)
		if computedCost(l) {
			body = append(body,
				jen.If(jen.Add(cost).Op("==").Lit(0)).Block(mc.forward),
				e.checkCost(mc, lv, cost))
		}
	}
	key := e.keyCode(l.key, mc.params, mc.scope, &body)
	var ask jen.Code
	if l.cost == nil {
		ask = jen.Id(mc.id.recv).Dot(mc.id.limiter).Dot("Allow").Call(mc.ctx, jen.Id(lv), key)
	} else {
		ask = jen.Qual(RuntimePath, "AllowN").Call(mc.ctx, jen.Id(mc.id.recv).Dot(mc.id.limiter), jen.Id(lv), key, cost)
	}
	d, errName := mc.scope.fresh("d"), mc.scope.fresh("err")
	sig := mc.wm.sig
	body = append(body,
		jen.List(jen.Id(d), jen.Id(errName)).Op(":=").Add(ask),
		jen.If(jen.Id(errName).Op("!=").Nil()).Block(e.returnZero(sig, mc.scope, jen.Id(errName))...))
	body = append(body, e.waitLoop(mc, d, func() *jen.Statement { return jen.Id(d).Dot("RetryAfter") }, ask, errName)...)
	return append(body,
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
	dynamic := slices.ContainsFunc(ls, computedCost)
	if dynamic {
		doc += " A limit whose cost is 0 is left out and records nothing"
		if !slices.ContainsFunc(ls, func(l *limit) bool { return !computedCost(l) }) {
			doc += "; when every cost is 0 the call is forwarded without asking the limiter"
		}
		doc += ". A negative cost or one above its limit's capacity is an error wrapping runtime.ErrCostExceedsMax, and the limiter is not asked."
	}
	e.comment(doc + waitDoc(mc.wm))

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
	}

	reqs := mc.scope.fresh("reqs")
	fields := func(i int) []jen.Code {
		fs := []jen.Code{
			jen.Id("Limit").Op(":").Id(e.limitVar(ls[i])),
			jen.Id("Key").Op(":").Add(keys[i]),
		}
		if ls[i].cost != nil {
			fs = append(fs, jen.Id("Cost").Op(":").Add(costs[i]))
		}
		return fs
	}
	var all *jen.Statement
	if dynamic {
		// A computed cost may be 0: its limit is then left out, and the
		// runtime, which reads a Cost of 0 as 1, never sees it. The
		// slice escapes through the runtime's interface call, as the
		// array below does: one allocation per call.
		body = append(body, jen.Id(reqs).Op(":=").Make(jen.Index().Qual(RuntimePath, "Request"), jen.Lit(0), jen.Lit(len(ls))))
		for i, l := range ls {
			add := jen.Id(reqs).Op("=").Append(jen.Id(reqs), jen.Qual(RuntimePath, "Request").Values(fields(i)...))
			if !computedCost(l) {
				body = append(body, add)
				continue
			}
			body = append(body, jen.If(jen.Add(costs[i]).Op("!=").Lit(0)).Block(e.checkCost(mc, e.limitVar(l), costs[i]), add))
		}
		if !slices.ContainsFunc(ls, func(l *limit) bool { return !computedCost(l) }) {
			body = append(body, jen.If(jen.Len(jen.Id(reqs)).Op("==").Lit(0)).Block(mc.forward))
		}
		all = jen.Id(reqs)
	} else {
		elems := make([]jen.Code, 0, len(ls)+1)
		for i := range ls {
			elems = append(elems, jen.Line().Values(fields(i)...))
		}
		elems = append(elems, jen.Line())
		// One array, sliced for both calls. It escapes through the
		// runtime's interface call: one allocation per call (160 B for
		// two limits), measured by the e2e benchmarks.
		body = append(body, jen.Id(reqs).Op(":=").Index(jen.Op("...")).Qual(RuntimePath, "Request").Values(elems...))
		all = jen.Id(reqs).Index(jen.Empty(), jen.Empty())
	}
	ds, errName := mc.scope.fresh("ds"), mc.scope.fresh("err")
	sig := mc.wm.sig
	ask := jen.Qual(RuntimePath, "AllowAll").Call(mc.ctx, jen.Id(mc.id.recv).Dot(mc.id.limiter), all.Clone().Op("..."))
	body = append(body,
		jen.List(jen.Id(ds), jen.Id(errName)).Op(":=").Add(ask),
		jen.If(jen.Id(errName).Op("!=").Nil()).Block(e.returnZero(sig, mc.scope, jen.Id(errName))...))
	retry := func() *jen.Statement { return jen.Id(ds).Dot("LimitError").Call(all.Clone()).Dot("RetryAfter") }
	body = append(body, e.waitLoop(mc, ds, retry, ask, errName)...)
	return append(body,
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
