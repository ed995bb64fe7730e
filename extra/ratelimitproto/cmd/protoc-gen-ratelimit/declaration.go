package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitproto/ratelimitgenv1"
	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// service is a service with at least one limited rpc, and the limits of
// each of its rpcs (none for some).
type service struct {
	proto   *protogen.Service
	methods []method
}

type method struct {
	proto  *protogen.Method
	limits []limit
}

// countCodes returns the status codes of m's calls that count, which
// every limit of m lists alike; nil when every call counts.
func (m method) countCodes() []statusCode {
	if len(m.limits) == 0 {
		return nil
	}
	return m.limits[0].countCodes
}

// limit is one checked (ratelimitgen.v1.limit) option.
type limit struct {
	runtime.Limit
	key  *fieldPath // nil: one count for every call
	cost *fieldPath // nil: a cost of 1
	// countCodes are the status codes of the calls that count; nil: every
	// call counts.
	countCodes []statusCode
}

// fieldPath is a path of fields from the request message, such as
// user.id, each but the last a singular message field.
type fieldPath struct {
	text   string
	fields []*protogen.Field
}

// limitField is the number of the ratelimitgen.v1.limit extension of
// MethodOptions, for its options' source locations.
var limitField = int32(ratelimitgenv1.E_Limit.TypeDescriptor().Number())

// declarations returns the services of f with limited rpcs, or every
// error in their declarations, each at file:line:col.
func declarations(f *protogen.File) ([]service, []string) {
	var services []service
	var errs []string
	for _, s := range f.Services {
		svc := service{proto: s}
		limited := false
		for _, m := range s.Methods {
			limits, merrs := methodLimits(f, m)
			errs = append(errs, merrs...)
			svc.methods = append(svc.methods, method{proto: m, limits: limits})
			limited = limited || len(limits) > 0
		}
		if limited {
			services = append(services, svc)
		}
	}
	return services, errs
}

// methodLimits checks the limits declared on m.
func methodLimits(f *protogen.File, m *protogen.Method) ([]limit, []string) {
	opts, _ := m.Desc.Options().(*descriptorpb.MethodOptions)
	if opts == nil || !proto.HasExtension(opts, ratelimitgenv1.E_Limit) {
		return nil, nil
	}
	decls, _ := proto.GetExtension(opts, ratelimitgenv1.E_Limit).([]*ratelimitgenv1.Limit)
	var limits []limit
	var errs []string
	names := map[string]bool{}
	for i, d := range decls {
		c := checker{f: f, m: m, pos: optionPos(f, m, i)}
		l := c.limit(d, i)
		if c.errs == nil && names[l.Name] {
			c.errorf("a second limit named %q: give each limit of an rpc its own name", l.Name)
		}
		names[l.Name] = true
		if c.errs == nil && i > 0 && len(limits) > 0 && !slices.Equal(l.countCodes, limits[0].countCodes) {
			// A call is settled at once on every limit: it counts or it
			// does not.
			c.errorf("count_codes lists %s where the rpc's first limit lists %s: every limit of an rpc counts the same calls, so list the same codes on each", orNone(l.countCodes), orNone(limits[0].countCodes))
		}
		if c.errs != nil {
			errs = append(errs, c.errs...)
			continue
		}
		limits = append(limits, l)
	}
	if errs != nil {
		return nil, errs
	}
	return limits, nil
}

// optionPos returns the position of m's i-th limit option as
// file:line:col, or of m itself when f carries no source locations.
// protoc locates an option as a whole, so a message about one of its
// fields is placed at its "option".
func optionPos(f *protogen.File, m *protogen.Method, i int) string {
	path := append(slices.Clone(m.Location.Path), 4, limitField, int32(i))
	loc := f.Desc.SourceLocations().ByPath(path)
	if loc.Path == nil {
		loc = f.Desc.SourceLocations().ByPath(m.Location.Path)
	}
	if loc.Path == nil {
		return f.Desc.Path()
	}
	return fmt.Sprintf("%s:%d:%d", f.Desc.Path(), loc.StartLine+1, loc.StartColumn+1)
}

// checker collects the errors of one limit option.
type checker struct {
	f    *protogen.File
	m    *protogen.Method
	pos  string
	errs []string
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf("%s: rpc %s: %s", c.pos, c.m.Desc.Name(), fmt.Sprintf(format, args...)))
}

// limit checks the i-th limit option d of the rpc.
func (c *checker) limit(d *ratelimitgenv1.Limit, i int) limit {
	var l limit
	l.Name = d.GetName()
	if l.Name == "" {
		if i > 0 {
			c.errorf("every limit of an rpc after the first needs its own name, which keeps its count apart and names it in denials; add e.g. name: %q", defaultName(c.m)+".all")
		}
		l.Name = defaultName(c.m)
	} else if strings.ContainsFunc(l.Name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		c.errorf("name %q contains whitespace or a control character; use e.g. \"-\" or \".\" instead", l.Name)
	}
	if period, ok := parse.CalendarWindow(d.GetWindow()); ok {
		l.Calendar.Period = period
	} else {
		l.Window = c.window(d.GetWindow())
	}
	if tz := d.GetTz(); tz != "" {
		l.Calendar.Zone = c.zone(tz, l.Calendar.Period, d.GetWindow(), l.Window > 0)
	}
	switch max := d.GetMax(); {
	case max == 0:
		c.errorf("max is missing or 0: write the units admitted per window, e.g. max: 10")
	case max > math.MaxInt32:
		c.errorf("max %d is too large; it can be at most %d", max, math.MaxInt32)
	default:
		l.Max = int(max)
	}
	l.Algorithm = c.algorithm(d.GetAlgo())
	if l.Calendar.Period != 0 {
		switch {
		case d.GetAlgo() == "":
			l.Algorithm = runtime.FixedWindow
		case l.Algorithm != "" && l.Algorithm != runtime.FixedWindow:
			c.errorf("window %q is a calendar window, and calendar windows are fixed windows, counted from the start of one %v to the start of the next; algo %q has no calendar boundary: remove algo, or use a duration window", d.GetWindow(), l.Calendar.Period, d.GetAlgo())
		}
	}
	if b := d.GetBurst(); b > 0 {
		algo := l.Algorithm
		if algo == "" && d.GetAlgo() == "" {
			algo = runtime.Algorithms()[0]
		}
		switch {
		case b > math.MaxInt32:
			c.errorf("burst %d is too large; it can be at most %d", b, math.MaxInt32)
		case algo != "" && !parse.BurstApplies(algo):
			c.errorf("burst applies only to algo \"token-bucket\" and \"gcra\", whose bucket it sizes; this limit uses %q: remove burst or choose one of them", algo)
		default:
			l.Burst = int(b)
		}
	}
	if c.errs == nil {
		if err := l.Validate(); err != nil {
			c.errorf("%s", strings.TrimPrefix(err.Error(), "ratelimit: "))
		}
	}
	streams := c.m.Desc.IsStreamingClient()
	if k := d.GetKey(); k != "" {
		if streams {
			c.errorf("key %q names a field of the request, which a client-streaming rpc receives only after the call is admitted: remove key to count every call together", k)
		} else {
			l.key = c.path("key", k, keyField)
		}
	}
	if k := d.GetCost(); k != "" {
		if streams {
			c.errorf("cost %q names a field of the request, which a client-streaming rpc receives only after the call is admitted: remove cost", k)
		} else {
			l.cost = c.path("cost", k, costField)
		}
	}
	if cs := d.GetCountCodes(); len(cs) > 0 {
		l.countCodes = c.countCodes(cs)
	}
	return l
}

// orNone is codeNames, or "none" for no codes.
func orNone(codes []statusCode) string {
	if len(codes) == 0 {
		return "none"
	}
	return codeNames(codes)
}

// defaultName is the name of an rpc's first limit when it has none.
func defaultName(m *protogen.Method) string {
	return string(m.Parent.Desc.Name()) + "." + string(m.Desc.Name())
}

// zone checks tz, the time zone of a calendar window of period, by
// loading it as the runtime will. With period 0, window is the duration
// window as written, and valid says whether it is one: a missing or wrong
// window is reported already.
func (c *checker) zone(tz string, period runtime.Period, window string, valid bool) string {
	switch _, err := time.LoadLocation(tz); {
	case period == 0 && valid:
		c.errorf("tz applies only to a calendar window (\"1d\", \"1w\", \"1mo\" or \"1y\"), whose periods begin at midnight in that zone; window %q is a duration, the same in every zone: remove tz", window)
	case period == 0:
		return ""
	case tz == "Local":
		c.errorf("tz \"Local\" is the time zone of whichever machine runs the program; name the zone, e.g. tz: \"Europe/Berlin\", or remove tz for UTC")
	case err != nil:
		c.errorf("unknown time zone %q; write an IANA time zone name, e.g. tz: \"Europe/Berlin\" (zone names are case-sensitive)", tz)
	default:
		return tz
	}
	return ""
}

// calendarCount reports whether s counts calendar periods, as "2mo" or
// "7d" do.
func calendarCount(s string) bool {
	for _, unit := range []string{"d", "w", "mo", "y"} {
		if n, ok := strings.CutSuffix(s, unit); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// window parses window, a Go duration of at least 1µs in whole
// microseconds, the limiters' resolution.
func (c *checker) window(s string) time.Duration {
	if s == "" {
		c.errorf("window is missing: write the period in which max units are admitted, e.g. window: \"60s\"")
		return 0
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && calendarCount(s):
		c.errorf("window %q: calendar windows are one period long, from the start of one to the start of the next; write \"1d\", \"1w\", \"1mo\" or \"1y\"", s)
	case err != nil:
		c.errorf("window %q is not a Go duration; write e.g. \"60s\", \"5m\" or \"1h30m\" (units ns, us, ms, s, m, h), or a calendar window: \"1d\", \"1w\", \"1mo\" or \"1y\"", s)
	case d < time.Microsecond:
		c.errorf("window %q must be at least 1µs", s)
	case d%time.Microsecond != 0:
		c.errorf("window %q is not a whole number of microseconds, the limiter's resolution", s)
	default:
		return d
	}
	return 0
}

// algorithm checks algo, one of runtime.Algorithms() spelt as its value.
func (c *checker) algorithm(s string) runtime.Algorithm {
	if s == "" {
		return ""
	}
	var names []string
	for _, a := range runtime.Algorithms() {
		if s == string(a) {
			return a
		}
		names = append(names, fmt.Sprintf("%q", a))
	}
	c.errorf("unknown algo %q; the algorithms are %s", s, strings.Join(names, ", "))
	return ""
}

// A fieldCheck says why the last field of a path cannot be used, or "".
type fieldCheck func(f *protogen.Field) string

// keyField accepts the singular scalar fields whose values are keys.
func keyField(f *protogen.Field) string {
	switch {
	case f.Desc.IsMap():
		return "is a map"
	case f.Desc.IsList():
		return "is repeated"
	}
	switch f.Desc.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "is a message: name one of its fields, e.g. " + string(f.Desc.Name()) + "." + firstField(f.Message)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "is a " + f.Desc.Kind().String() + ", whose equal values (0 and -0) have different keys"
	}
	return ""
}

// costField accepts an integer field, whose value is the cost, and a
// repeated or map field, whose length is.
func costField(f *protogen.Field) string {
	if f.Desc.IsList() || f.Desc.IsMap() {
		return ""
	}
	switch f.Desc.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return ""
	}
	return "is a " + f.Desc.Kind().String() + ": a cost is an integer field, or a repeated field whose length is the cost"
}

func firstField(m *protogen.Message) string {
	if m == nil || len(m.Fields) == 0 {
		return "id"
	}
	return string(m.Fields[0].Desc.Name())
}

// path resolves option opt's value, a path of fields from the request
// message, whose last field check accepts.
func (c *checker) path(opt, text string, check fieldCheck) *fieldPath {
	msg := c.m.Input
	p := &fieldPath{text: text}
	for i, name := range strings.Split(text, ".") {
		var f *protogen.Field
		for _, mf := range msg.Fields {
			if string(mf.Desc.Name()) == name {
				f = mf
			}
		}
		if f == nil {
			c.errorf("%s %q: %s has no field %q; its fields are %s", opt, text, msg.Desc.FullName(), name, fieldList(msg))
			return nil
		}
		p.fields = append(p.fields, f)
		if i == strings.Count(text, ".") {
			break
		}
		if f.Message == nil || f.Desc.IsList() || f.Desc.IsMap() {
			c.errorf("%s %q: %s.%s is not a singular message, so no field can follow it", opt, text, msg.Desc.Name(), name)
			return nil
		}
		msg = f.Message
	}
	last := p.fields[len(p.fields)-1]
	if why := check(last); why != "" {
		c.errorf("%s %q: %s.%s %s", opt, text, last.Parent.Desc.Name(), last.Desc.Name(), why)
		return nil
	}
	return p
}

func fieldList(m *protogen.Message) string {
	if len(m.Fields) == 0 {
		return "none"
	}
	var names []string
	for _, f := range m.Fields {
		names = append(names, string(f.Desc.Name()))
	}
	return strings.Join(names, ", ")
}
