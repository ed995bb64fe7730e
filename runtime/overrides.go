package runtime

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Override changes a limit at run time, by the limit's Name. A zero field
// keeps the limit's own value, so an override of Max alone leaves Window,
// Burst and Mode as the code declares them.
type Override struct {
	// Max replaces Limit.Max when positive. It also replaces a Max computed
	// per call (a directive's max= expression).
	Max int
	// Window replaces Limit.Window when positive.
	Window time.Duration
	// Burst replaces Limit.Burst when positive.
	Burst int
	// Mode replaces Limit.Mode when not nil: ModeShadow to watch a limit
	// without enforcing it, ModeOff to turn it off, ModeEnforce to enforce
	// a limit the code declares in shadow mode.
	Mode *Mode
}

// Overrides holds the overrides in force, by limit name, for Operate
// (WithOverrides). Its zero value holds none and is ready to use. Set and
// WatchFile replace the whole set at once; a decision reads one set,
// never a mix of two.
//
// An overridden limit keeps its counts: raising or lowering Max takes effect
// on the next call of every key, against the admissions already recorded.
// A denial cached by runtime/redislimit holds only for the values it was
// decided with, so a change is never answered from a stale denial.
type Overrides struct {
	cur atomic.Pointer[map[string]Override]
}

// Set replaces the overrides in force with m, keyed by Limit.Name. It
// returns an error, and changes nothing, if an override has a negative
// field, a Window under 1µs or an unknown Mode. A nil or empty m removes
// every override.
func (o *Overrides) Set(m map[string]Override) error {
	if err := validateOverrides(m); err != nil {
		return err
	}
	c := make(map[string]Override, len(m))
	for name, ov := range m {
		if ov.Mode != nil {
			mode := *ov.Mode
			ov.Mode = &mode
		}
		c[name] = ov
	}
	o.cur.Store(&c)
	return nil
}

func validateOverrides(m map[string]Override) error {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		ov := m[name]
		switch {
		case name == "":
			problems = append(problems, "an override has an empty limit name")
		case ov.Max < 0:
			problems = append(problems, fmt.Sprintf("%q: max %d is negative", name, ov.Max))
		case ov.Window < 0 || (ov.Window > 0 && ov.Window < time.Microsecond):
			problems = append(problems, fmt.Sprintf("%q: window %v must be at least 1µs", name, ov.Window))
		case ov.Burst < 0:
			problems = append(problems, fmt.Sprintf("%q: burst %d is negative", name, ov.Burst))
		case ov.Mode != nil && *ov.Mode > ModeOff:
			problems = append(problems, fmt.Sprintf("%q: unknown %#v", name, *ov.Mode))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("ratelimit: invalid overrides: %s", strings.Join(problems, "; "))
	}
	return nil
}

// apply returns reqs with the overrides in force applied, copying reqs only
// when an override matches, so that the caller's requests are never changed.
func (o *Overrides) apply(reqs []Request) []Request {
	m := o.cur.Load()
	if m == nil || len(*m) == 0 {
		return reqs
	}
	var out []Request
	for i, r := range reqs {
		ov, ok := (*m)[r.Limit.Name]
		if !ok {
			continue
		}
		if out == nil {
			out = append(make([]Request, 0, len(reqs)), reqs...)
		}
		l := &out[i].Limit
		if ov.Max > 0 {
			l.Max = ov.Max
		}
		if ov.Window > 0 {
			l.Window = ov.Window
		}
		if ov.Burst > 0 {
			l.Burst = ov.Burst
		}
		if ov.Mode != nil {
			l.Mode = *ov.Mode
		}
	}
	if out == nil {
		return reqs
	}
	return out
}
