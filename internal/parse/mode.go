package parse

import (
	"strconv"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// checkMode checks mode=: enforce (the default) or shadow, spelt as the
// runtime's Mode.String. mode=off is refused: a limit switched off in source
// is a limit nobody sees, whereas a run-time override says who disabled it
// and is undone without a release.
func (p *parser) checkMode(v value) {
	s := v.Value
	switch s {
	case runtime.ModeEnforce.String():
		p.d.Mode = runtime.ModeEnforce
		return
	case runtime.ModeShadow.String():
		p.d.Mode = runtime.ModeShadow
		return
	}
	if u, err := strconv.Unquote(s); err == nil && (u == runtime.ModeEnforce.String() || u == runtime.ModeShadow.String()) {
		p.errorf(v.off, "write the mode without quotes: mode=%s", u)
		return
	}
	switch m, ok := suggestMode(s); {
	case ok && m == runtime.ModeOff:
		p.errorf(v.off, "mode=%s cannot be written in a directive: a disabled limit belongs in a run-time override, not in source; remove the directive to drop the limit, or write mode=shadow to count calls without denying any", s)
	case ok:
		p.errorf(v.off, "unknown mode %q; did you mean mode=%s? The modes are enforce (the default) and shadow", s, m)
	default:
		p.errorf(v.off, "unknown mode %q; write mode=enforce (the default) or mode=shadow", s)
	}
}

// modeSynonyms maps what people write for a mode, lower-cased and without
// "-" or "_", to the mode it means.
var modeSynonyms = map[string]runtime.Mode{
	"enforce":   runtime.ModeEnforce,
	"enforced":  runtime.ModeEnforce,
	"enforcing": runtime.ModeEnforce,
	"on":        runtime.ModeEnforce,
	"shadow":    runtime.ModeShadow,
	"dryrun":    runtime.ModeShadow,
	"observe":   runtime.ModeShadow,
	"monitor":   runtime.ModeShadow,
	"log":       runtime.ModeShadow,
	"report":    runtime.ModeShadow,
	"off":       runtime.ModeOff,
	"disabled":  runtime.ModeOff,
	"disable":   runtime.ModeOff,
	"none":      runtime.ModeOff,
	"false":     runtime.ModeOff,
}

// suggestMode returns the mode that s most likely means: a synonym in any
// case or spelling of separators, or a mode name within two typos.
func suggestMode(s string) (runtime.Mode, bool) {
	n := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s))
	if m, ok := modeSynonyms[n]; ok {
		return m, true
	}
	for m := runtime.ModeEnforce; m <= runtime.ModeOff; m++ {
		if d := EditDistance(n, m.String()); d <= 2 && d < len(n) {
			return m, true
		}
	}
	return 0, false
}
