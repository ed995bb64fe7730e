package generate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// wrapperDoc is the doc comment of w's type, which says once what its
// methods do; each method's own says which limits it uses.
func wrapperDoc(w *wrapper) string {
	var multi, computed, perCallMax, shadow, wait, unlimited bool
	for _, wm := range w.methods {
		multi = multi || len(wm.limits) > 1
		computed = computed || slices.ContainsFunc(wm.limits, computedCost)
		perCallMax = perCallMax || slices.ContainsFunc(wm.limits, (*limit).perCallMax)
		shadow = shadow || slices.ContainsFunc(wm.limits, func(l *limit) bool { return l.mode == runtime.ModeShadow })
		wait = wait || methodWait(wm) > 0
		unlimited = unlimited || len(wm.limits) == 0
	}
	owner := w.owner.Name()
	var b strings.Builder
	if w.iface {
		fmt.Fprintf(&b, "%s forwards each call to the %s it wraps once a runtime.Limiter admits it under the method's limits.", w.name, owner)
	} else {
		fmt.Fprintf(&b, "%s embeds the %s it wraps and overrides its rate-limited methods, which forward a call once a runtime.Limiter admits it under the method's limits.", w.name, owner)
	}
	fmt.Fprintf(&b, " A denied call returns a *runtime.LimitError (errors.Is(err, runtime.ErrLimited)), and a call the limiter cannot decide returns the limiter's error as it is; neither reaches the wrapped %s.", owner)
	if multi {
		b.WriteString(" A method with several limits counts a call in all of them or in none.")
	}
	if computed {
		b.WriteString(" A limit whose computed cost is 0 is left out of the decision and counts nothing; a negative cost, or one above the limit's capacity, is an error wrapping runtime.ErrInvalidCost.")
	}
	if perCallMax {
		b.WriteString(" A limit whose Max a call computes is copied and given that Max; a Max below 1 is an error from the limiter, not a denial.")
	}
	if shadow {
		b.WriteString(" A limit in shadow mode is decided and counted as any other, but its denial is only reported: the call goes through unless an enforced limit denies it.")
	}
	if wait {
		b.WriteString(" A method that waits for room sleeps as long as each denial's RetryAfter says and asks again, for up to its wait in all and never past the deadline of the call's context; it returns the context's error if the context is done meanwhile.")
	}
	switch {
	case !w.iface:
		b.WriteString(" Its other methods are promoted unchanged.")
	case unlimited:
		b.WriteString(" Its methods without limits forward every call unchanged.")
	}
	return b.String()
}

// methodDoc is the one-sentence doc comment of a method of w: which
// limits it forwards within, keyed by what, at what cost.
func methodDoc(w *wrapper, wm *wrapperMethod, limitVar func(*limit) string) string {
	target := "the wrapped " + w.owner.Name()
	if !w.iface {
		target = "the embedded " + w.owner.Name()
	}
	if len(wm.limits) == 0 {
		return fmt.Sprintf("%s forwards to %s; it has no limit.", wm.name, target)
	}
	vars := make([]string, len(wm.limits))
	descs := make([]string, len(wm.limits))
	for i, l := range wm.limits {
		vars[i] = limitVar(l)
		var words []string
		if len(l.key) > 0 {
			words = append(words, "keyed by "+keyWords(l.key))
		}
		if l.cost != nil {
			words = append(words, "at a cost of "+l.cost.text)
		}
		if l.perCallMax() {
			words = append(words, "with its Max set to "+l.maxText)
		}
		if l.mode == runtime.ModeShadow {
			words = append(words, "in shadow mode")
		}
		descs[i] = strings.Join(words, ", ")
	}
	var within string
	if same := !slices.ContainsFunc(descs, func(d string) bool { return d != descs[0] }); same {
		within = listWords(vars)
		if descs[0] != "" {
			within += ", " + descs[0]
		}
	} else {
		items := make([]string, len(vars))
		for i := range vars {
			items[i] = vars[i]
			if descs[i] != "" {
				items[i] += " (" + descs[i] + ")"
			}
		}
		within = listWords(items)
	}
	doc := fmt.Sprintf("%s forwards to %s within %s", wm.name, target, within)
	if w := methodWait(wm); w > 0 {
		doc += fmt.Sprintf(", waiting up to %s for room", w)
	}
	return doc + "."
}

// listWords joins items as a list in a sentence: "a", "a and b",
// "a, b and c".
func listWords(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
