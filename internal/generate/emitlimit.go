package generate

import (
	"fmt"
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
	e.comment(fmt.Sprintf("%s calls the wrapped %s's %s if the limit %s, admits the call. Otherwise it returns a *runtime.LimitError, or the limiter's error if the limiter could not decide.",
		mc.wm.name, mc.w.owner.Name(), mc.wm.name, limitWords(l)))

	var body []jen.Code
	key := e.keyCode(l.key, mc.params, mc.scope, &body)
	d, errName := mc.scope.fresh("d"), mc.scope.fresh("err")
	var ask jen.Code
	if l.cost == nil {
		ask = jen.Id(mc.id.recv).Dot(mc.id.limiter).Dot("Allow").Call(mc.ctx, jen.Id(lv), key)
	} else {
		ask = jen.Qual(RuntimePath, "AllowN").Call(mc.ctx, jen.Id(mc.id.recv).Dot(mc.id.limiter), jen.Id(lv), key, e.costCode(l.cost, mc.params, false))
	}
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
	e.comment(fmt.Sprintf("%s calls the wrapped %s's %s if every one of its limits admits the call: %s. When one of them denies the call, none of them counts it, and %s returns a *runtime.LimitError naming the limit with the longest wait. It returns the limiter's error if the limiter could not decide.",
		mc.wm.name, mc.w.owner.Name(), mc.wm.name, strings.Join(words, "; "), mc.wm.name))

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

	// So is a cost, unless it is a constant or a plain variable or field.
	costUses := map[string]int{}
	for _, l := range ls {
		if l.cost != nil {
			costUses[l.cost.text]++
		}
	}
	sharedCost := map[string]jen.Code{}
	costs := make([]jen.Code, len(ls))
	for i, l := range ls {
		if l.cost == nil {
			continue
		}
		if c, ok := sharedCost[l.cost.text]; ok {
			costs[i] = c
			continue
		}
		costs[i] = e.costCode(l.cost, mc.params, true)
		if costUses[l.cost.text] > 1 && l.cost.value == nil && !l.cost.plain {
			name := mc.scope.fresh("cost")
			body = append(body, jen.Id(name).Op(":=").Add(costs[i]))
			costs[i] = jen.Id(name)
			sharedCost[l.cost.text] = costs[i]
		}
	}

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
