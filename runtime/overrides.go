package runtime

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Override changes a limit at run time, by the limit's Name. A zero field
// keeps the limit's own value, so an override of Max alone leaves Window,
// Burst and Mode as the code declares them.
//
// For a Concurrency limit, Max is the calls in flight and Window the
// permits' lease; a permit keeps the lease it was taken with, and a lower
// Max takes no permit away from a running call.
type Override struct {
	// Max replaces Limit.Max when positive. It also replaces a Max computed
	// per call (a directive's max= expression).
	Max int
	// Window replaces Limit.Window when positive, and clears a Calendar:
	// it turns a calendar window back into a window of that length.
	Window time.Duration
	// Calendar, when its Period is set, replaces Limit.Calendar, clears
	// Window and makes the limit a FixedWindow without Burst: calendar
	// windows are fixed windows. It cannot be combined with Window or
	// Burst, and its Zone must load with time.LoadLocation ("" is UTC).
	// A Concurrency limit cannot take one.
	Calendar Calendar
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
// Told the process's limits (AddLimits), and the limits decided through
// Operate, it refuses a set that would make any of them invalid, and names
// the overrides that match none of them (Unmatched). At decide time, an
// override under which a request would be invalid, though it is valid as
// declared, is not applied to it: the declared limit decides, and Operate
// logs it (see WithLogger).
//
// An overridden limit keeps its counts: raising or lowering Max takes effect
// on the next call of every key, against the admissions already recorded.
// A denial cached by runtime/redislimit holds only for the values it was
// decided with, so a change is never answered from a stale denial.
type Overrides struct {
	cur atomic.Pointer[map[string]Override]
	// mu orders the changes (Set, the loads, AddLimits) and guards known:
	// a set is checked against the limits known when it is put in force.
	mu sync.Mutex
	// known holds the limits told by AddLimits, by Limit.Name, each with
	// the largest cost its calls use.
	known map[string][]Request
	// decided holds the limits Operate decided, by Limit.Name, as first
	// declared, with the largest cost decided: copied on write, so that a
	// decision reads it without a lock.
	decided atomic.Pointer[map[string]Request]
}

// maxDecided bounds the limits Overrides learns from decisions: names come
// from code, so a process that decides more names makes them up at run
// time, and the rest are checked at decide time only.
const maxDecided = 10_000

// learn notes the limits of reqs, as declared, for Set and the loads to
// check overrides against.
func (o *Overrides) learn(reqs []Request) {
	m := o.decided.Load()
	for _, r := range reqs {
		if m != nil {
			if have, ok := (*m)[r.Limit.Name]; ok && r.cost() <= have.cost() {
				continue
			}
		}
		o.mu.Lock()
		m = o.decided.Load()
		have, ok := Request{}, false
		if m != nil {
			have, ok = (*m)[r.Limit.Name]
		}
		if (ok && r.cost() > have.cost()) || (!ok && (m == nil || len(*m) < maxDecided)) {
			n := make(map[string]Request, 1)
			if m != nil {
				n = make(map[string]Request, len(*m)+1)
				for k, v := range *m {
					n[k] = v
				}
			}
			learned := Request{Limit: r.Limit, Cost: r.cost()}
			if ok {
				learned.Limit = have.Limit
			}
			n[r.Limit.Name] = learned
			o.decided.Store(&n)
			m = &n
		}
		o.mu.Unlock()
	}
}

// limits returns the limits a set of overrides is checked against: those
// told by AddLimits and those decided; o.mu is held.
func (o *Overrides) limits() map[string][]Request {
	m := o.decided.Load()
	if m == nil || len(*m) == 0 {
		return o.known
	}
	all := make(map[string][]Request, len(o.known)+len(*m))
	for name, rs := range o.known {
		all[name] = rs
	}
	for name, r := range *m {
		all[name] = append(all[name][:len(all[name]):len(all[name])], r)
	}
	return all
}

// Set replaces the overrides in force with m, keyed by Limit.Name. It
// returns an error, and changes nothing, if an override has a negative
// field, a Window under 1µs, an unknown Mode, a Calendar without a
// Period, with an unknown one or with a Zone that does not load, or a
// Calendar beside a Window or Burst, or would make a limit told by
// AddLimits, or decided through Operate, invalid (see AddLimits). A name
// that matches no such limit is no error (see Unmatched). A nil or empty m
// removes every override.
func (o *Overrides) Set(m map[string]Override) error {
	if err := o.set(m); err != nil {
		return fmt.Errorf("ratelimit: overrides refused, those in force stay: %w", err)
	}
	return nil
}

// set is Set without the prefix of its errors, for the loads to add their
// own.
func (o *Overrides) set(m map[string]Override) error {
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
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := checkOverridden(c, o.limits()); err != nil {
		return err
	}
	o.cur.Store(&c)
	return nil
}

// AddLimits tells o limits that the process decides, as a generated
// package's RateLimits() returns them: each a Request whose Cost is the
// largest constant cost its calls use (0 for 1, or when each call computes
// it), whose Key is ignored, and whose Limit has a Max of 0 where each call
// computes it. From then on, Set, LoadFile and WatchFile refuse whole a set
// of overrides under which runtime.Validate would refuse one of these
// requests, as it would then refuse every such call. A Max computed per
// call and not overridden passes if the cost or MaxUnits as Max would.
//
// AddLimits returns an error, and adds nothing, if a request has no Name
// or a negative Cost, or if the overrides in force would make one of reqs
// invalid.
func (o *Overrides) AddLimits(reqs ...Request) error {
	added := make(map[string][]Request, len(reqs))
	for _, r := range reqs {
		switch {
		case r.Limit.Name == "":
			return fmt.Errorf("ratelimit: AddLimits was given a limit without a Name; overrides find limits by Name, so set Limit.Name")
		case r.Cost < 0:
			return fmt.Errorf("ratelimit: AddLimits was given limit %q with Cost %d; give the largest cost its calls use, or 0 for one unit", r.Limit.Name, r.Cost)
		}
		added[r.Limit.Name] = append(added[r.Limit.Name], Request{Limit: r.Limit, Cost: r.Cost})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur := o.cur.Load(); cur != nil {
		if err := checkOverridden(*cur, added); err != nil {
			return fmt.Errorf("ratelimit: AddLimits refused, as the overrides in force would break a limit: %w", err)
		}
	}
	if o.known == nil {
		o.known = make(map[string][]Request, len(added))
	}
	for name, rs := range added {
		o.known[name] = append(o.known[name], rs...)
	}
	return nil
}

// Unmatched returns, sorted, the names of the overrides in force that
// match no limit told by AddLimits or decided through Operate. Such
// an override changes no limit AddLimits was told of: its name is often a
// typo, or a limit since renamed, so a caller should report it (see
// WatchFile).
func (o *Overrides) Unmatched() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur := o.cur.Load()
	if cur == nil {
		return nil
	}
	var out []string
	decided := o.decided.Load()
	for name := range *cur {
		_, ok := o.known[name]
		if !ok && decided != nil {
			_, ok = (*decided)[name]
		}
		if !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func validateOverrides(m map[string]Override) error {
	var problems []string
	for _, name := range sortedNames(m) {
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
		case ov.Calendar != Calendar{}:
			if msg := validateOverrideCalendar(ov); msg != "" {
				problems = append(problems, fmt.Sprintf("%q: %s", name, msg))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// validateOverrideCalendar says what is wrong with the Calendar of ov, if
// anything. Unlike Limit.Validate, it loads the Zone: an override is
// checked once, when it is set, and a zone that does not load would fail
// every call of the limit.
func validateOverrideCalendar(ov Override) string {
	c := ov.Calendar
	switch {
	case c.Period == 0:
		return fmt.Sprintf("zone %q without a calendar Period: a zone applies only to a calendar window", c.Zone)
	case c.Period > Year:
		return fmt.Sprintf("unknown calendar %v; use Day, Week, Month or Year", c.Period)
	case ov.Window > 0:
		return fmt.Sprintf("window %v and a calendar window of a %v: give one of them", ov.Window, c.Period)
	case ov.Burst > 0:
		return fmt.Sprintf("burst %d with a calendar window, which is a fixed window and has no burst", ov.Burst)
	case c.Zone == "Local":
		return "zone \"Local\" is the time zone of whichever machine runs the program; name the zone, e.g. \"Europe/Berlin\""
	}
	if _, err := time.LoadLocation(c.Zone); err != nil {
		return fmt.Sprintf("unknown time zone %q; use an IANA name such as \"Europe/Berlin\"", c.Zone)
	}
	return ""
}

// checkOverridden returns an error naming each override of m that would
// make one of the known limits invalid (see AddLimits).
func checkOverridden(m map[string]Override, known map[string][]Request) error {
	var problems []string
	for _, name := range sortedNames(m) {
		for _, r := range known[name] {
			if err := validateOverridden(r, m[name]); err != nil {
				msg := strings.TrimSuffix(strings.TrimPrefix(err.Error(), "ratelimit: "), ": "+ErrInvalidCost.Error())
				problems = append(problems, fmt.Sprintf("%q: its calls would fail: %s", name, msg))
				break
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s; correct or remove the override", strings.Join(problems, "; "))
	}
	return nil
}

// validateOverridden validates r with ov applied. When r's Max is computed
// per call (0) and ov leaves it so, it tries the two values that let the
// most limits through: the smallest Max that admits r's cost, which keeps
// a Burst that defaults to Max small, and the largest, which makes a
// Burst of its own span the least time; the error is the first one's.
func validateOverridden(r Request, ov Override) error {
	r.Limit = ov.applyTo(r.Limit)
	if r.Limit.Max != 0 {
		return Validate(r)
	}
	r.Limit.Max = int(min(r.cost(), math.MaxInt))
	err := Validate(r)
	if err == nil {
		return nil
	}
	r.Limit.Max = min(maxExact, math.MaxInt)
	if Validate(r) == nil {
		return nil
	}
	return err
}

func sortedNames(m map[string]Override) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// applyTo returns l with ov's fields in place of its own.
func (ov Override) applyTo(l Limit) Limit {
	if ov.Max > 0 {
		l.Max = ov.Max
	}
	if ov.Window > 0 {
		l.Window, l.Calendar = ov.Window, Calendar{}
	}
	if ov.Calendar.Period != 0 {
		l.Window, l.Calendar, l.Burst = 0, ov.Calendar, 0
		if l.Algorithm != Concurrency {
			l.Algorithm = FixedWindow
		}
	}
	if ov.Burst > 0 {
		l.Burst = ov.Burst
	}
	if ov.Mode != nil {
		l.Mode = *ov.Mode
	}
	return l
}

// apply returns reqs with the overrides in force applied, copying reqs only
// when an override matches, so that the caller's requests are never changed.
// An override under which a request would be invalid, though it is valid
// as declared, is not applied to it: refused is told of the request and
// the error.
func (o *Overrides) apply(reqs []Request, refused func(Request, error)) []Request {
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
		l := ov.applyTo(r.Limit)
		if err := checkRequest(l, r.cost()); err != nil && checkRequest(r.Limit, r.cost()) == nil {
			refused(r, err)
			continue
		}
		if out == nil {
			out = append(make([]Request, 0, len(reqs)), reqs...)
		}
		out[i].Limit = l
	}
	if out == nil {
		return reqs
	}
	return out
}
