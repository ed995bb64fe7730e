package generate

import (
	"fmt"
	"go/types"
	"strconv"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// checkSharedNames reports limits of one run that share a name but not
// their rules. The runtime counts a limit by its name and key, so two
// directives with one name= share their counts: that is fine (and a way to
// make methods draw on one quota) only when they agree on the window, max,
// algorithm, capacity, mode and the types of the key's parts. Otherwise one count
// would be read under two rules, and neither limit would mean what it
// says.
func checkSharedNames(models []*pkgModel, ds *diagnostics) {
	first := map[string]*limit{}
	for _, m := range models {
		for _, l := range m.limits {
			f, seen := first[l.name]
			if !seen {
				first[l.name] = l
				continue
			}
			if a, b := limitRules(f), limitRules(l); a != b {
				ds.errorf(l.pos, "limit name %q is also used by the //ratelimit: line at %s, with other rules: there %s; here %s. Limits with one name share their counts, so give this one its own name= or make the two agree", l.name, f.pos, a, b)
			}
		}
	}
}

// limitRules spells what must agree between limits that share a name, for
// comparison and for messages.
func limitRules(l *limit) string {
	var b strings.Builder
	max := strconv.Itoa(l.max)
	if l.perCallMax() {
		max = "max=" + l.maxText
	}
	switch {
	case l.concurrency():
		fmt.Fprintf(&b, "at most %d in flight on a lease of %s", l.max, shortDuration(l.window))
	case !l.calendar.IsZero():
		fmt.Fprintf(&b, "%s per %v, %s", max, l.calendar, l.algorithm())
	default:
		fmt.Fprintf(&b, "%s %s, %s", max, windowWords(l.window), l.algorithm())
	}
	switch {
	case l.burstApplies() && l.perCallMax() && l.burst == 0:
		b.WriteString(" with a burst of max")
	case l.burstApplies():
		// burst= absent and burst= equal to max are the same bucket.
		b.WriteString(" with a burst of " + strconv.Itoa(l.capacity()))
	}
	if l.mode != runtime.ModeEnforce {
		b.WriteString(", in " + l.mode.String() + " mode")
	}
	if len(l.key) == 0 {
		b.WriteString(", no key")
		return b.String()
	}
	ts := make([]string, len(l.key))
	for i, kp := range l.key {
		ts[i] = types.TypeString(kp.typ, nil)
	}
	b.WriteString(", keyed by " + strings.Join(ts, ", "))
	return b.String()
}
