package generate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// maxTypeDocLines is how many lines a wrapper type's doc comment may take.
// What every wrapper does on a denial, an error or in shadow mode is the
// runtime's, documented once on runtime.Enforce, runtime.Wait,
// runtime.Admit and runtime.AdmitWait; the type says only which of them
// its methods call.
const maxTypeDocLines = 3

// wrapperDoc is the doc comment of w's type, at most maxTypeDocLines
// lines: what it wraps and the runtime call its limited methods make. rt
// is the file's import name of the runtime package, so that the doc links
// resolve.
func wrapperDoc(w *wrapper, rt string) string {
	held := func(wm *wrapperMethod) bool { return settled(wm) || holdsPermit(wm) }
	var wait, admit, admitWait bool // Wait, Admit and AdmitWait calls
	for _, wm := range w.methods {
		waits := methodWait(wm) > 0
		switch {
		case held(wm) && waits:
			admitWait = true
		case held(wm):
			admit = true
		case waits:
			wait = true
		}
	}
	owner := w.owner.Name()
	enforce := fmt.Sprintf("[%s.Enforce] admits the call", rt)
	why := "is settled or holds a permit"
	switch {
	case !slices.ContainsFunc(w.methods, holdsPermit):
		why = "is settled"
	case !slices.ContainsFunc(w.methods, settled):
		why = "holds a permit"
	}
	var others []string
	if wait {
		others = append(others, fmt.Sprintf("[%s.Wait] if it waits", rt))
	}
	if admit {
		others = append(others, fmt.Sprintf("[%s.Admit] if it %s", rt, why))
	}
	switch {
	case admitWait && admit:
		others = append(others, fmt.Sprintf("[%s.AdmitWait] if it also waits", rt))
	case admitWait:
		others = append(others, fmt.Sprintf("[%s.AdmitWait] if it %s", rt, why))
	}
	if len(others) > 0 {
		enforce += " (" + strings.Join(others, ", ") + ")"
	}
	var docs []string
	if w.iface {
		docs = []string{
			fmt.Sprintf("%s wraps a %s: each limited method calls the wrapped one only once %s, and returns its error otherwise.", w.name, owner, enforce),
			fmt.Sprintf("%s wraps a %s: each limited method calls it only once %s.", w.name, owner, enforce),
			fmt.Sprintf("%s wraps a %s with the limits of its methods.", w.name, owner),
		}
	} else {
		embedded := owner
		if !w.byValue {
			embedded = "*" + owner
		}
		docs = []string{
			fmt.Sprintf("%s embeds a %s, overriding each limited method to call the %s's only once %s and return its error otherwise.", w.name, embedded, owner, enforce),
			fmt.Sprintf("%s embeds a %s, overriding each limited method to call it only once %s.", w.name, embedded, enforce),
			fmt.Sprintf("%s embeds a %s and overrides its limited methods.", w.name, embedded),
		}
	}
	for _, doc := range docs[:len(docs)-1] {
		if len(wrapWords(doc)) <= maxTypeDocLines {
			return doc
		}
	}
	return docs[len(docs)-1]
}

// methodDoc is the one-sentence doc comment of a method of w: the limits
// that must admit a call, by name and rule, keyed by what, at what cost,
// e.g. `SendCode calls the wrapped SendCode if "Notifier.SendCode" admits
// it: 3 per 1m, keyed by req.Email.`
func methodDoc(w *wrapper, wm *wrapperMethod) string {
	target := "the wrapped " + wm.name
	if !w.iface {
		target = "the embedded " + w.owner.Name() + "'s " + wm.name
	}
	if len(wm.limits) == 0 {
		return fmt.Sprintf("%s calls %s; it has no limit.", wm.name, target)
	}
	var doc string
	if len(wm.limits) == 1 {
		doc = fmt.Sprintf("%s calls %s if %s admits it: %s", wm.name, target, strconv.Quote(wm.limits[0].name), ruleWords(wm.limits[0]))
	} else {
		items := make([]string, len(wm.limits))
		for i, l := range wm.limits {
			items[i] = fmt.Sprintf("%s (%s)", strconv.Quote(l.name), ruleWords(l))
		}
		doc = fmt.Sprintf("%s calls %s if %s all admit it", wm.name, target, listWords(items))
	}
	if w := methodWait(wm); w > 0 {
		what := "room"
		if holdsPermit(wm) {
			what = "a permit"
			if slices.ContainsFunc(wm.limits, func(l *limit) bool { return !l.concurrency() }) {
				what = "room and a permit"
			}
		}
		doc += fmt.Sprintf(", waiting up to %s for %s", shortDuration(w), what)
	}
	return doc + "."
}

// ruleWords says what l admits as the directive spells it: "3 per 1m",
// "req.Plan.Max per 1h, gcra with burst 100, keyed by req.Tenant, at a
// cost of len(req.Items), none when 0, in shadow mode". It has no
// parentheses, so that a method with several limits can list each one's
// in parentheses.
func ruleWords(l *limit) string {
	if l.concurrency() {
		return permitWords(l)
	}
	max := strconv.Itoa(l.max)
	if l.perCallMax() {
		max = l.maxText
	}
	s := max + " per " + limitWindow(l.window, l.calendar)
	if a := l.algorithm(); a != defaultAlgorithm() && l.calendar.IsZero() {
		// A calendar window is a fixed window, which it needs not say.
		s += ", " + string(a)
	}
	if l.burst > 0 {
		s += " with burst " + strconv.Itoa(l.burst)
	}
	if len(l.key) > 0 {
		s += ", keyed by " + keyWords(l.key)
	}
	if l.cost != nil {
		s += ", at a cost of " + l.cost.text
		if computedCost(l) {
			// The wrapper leaves a limit out of the call when its
			// computed cost is 0 (see limitedBody).
			s += ", none when 0"
		}
	}
	if l.refund != nil {
		s += ", given back when " + l.refund.text
	}
	if l.settle != nil {
		s += ", settled at " + l.settle.text + " when the call returns no error"
	}
	if l.mode == runtime.ModeShadow {
		s += ", in shadow mode"
	}
	return s
}

// permitWords is ruleWords for a concurrency limit: "at most 2 in
// flight, keyed by req.TenantID", with its lease when it is not the
// default.
func permitWords(l *limit) string {
	s := "at most " + strconv.Itoa(l.max) + " in flight"
	if l.window != parse.DefaultLease {
		s += " on a " + shortDuration(l.window) + " lease"
	}
	if len(l.key) > 0 {
		s += ", keyed by " + keyWords(l.key)
	}
	if l.mode == runtime.ModeShadow {
		s += ", in shadow mode"
	}
	return s
}

// listWords joins items as a list in a sentence: "a", "a and b",
// "a, b and c".
func listWords(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// wrapWords splits text into the lines of a comment wrapped at 76 columns.
func wrapWords(text string) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > 76 {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
