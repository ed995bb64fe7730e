package generate

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/packages"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// limit is a valid directive: one runtime.Limit, declared once in the
// generated file and used by every wrapper of its method.
type limit struct {
	// fn is the method the directive is on (not an instance of it).
	fn    *types.Func
	owner *types.TypeName
	// pos is the position of the directive, for messages about limits
	// that share a name.
	pos token.Position
	// constraint is the build constraint of the directive's file, or nil:
	// the limit is declared in the generated file for it.
	constraint constraint.Expr
	// name is the runtime.Limit's Name: name= or path/to/pkg.Type.Method.
	name   string
	window time.Duration
	// calendar is the calendar window of window=1d, 1w, 1mo or 1y in
	// tz=, in place of window, or the zero value.
	calendar runtime.Calendar
	// max is the max= literal or constant, or 0 when each call computes
	// it. A max= expression is maxText as written and maxExpr as checked
	// in the method's scope (for the declared type-level limit, only when
	// it is a constant; its methods' copies have their own).
	max     int
	maxText string
	maxExpr *maxExpr
	// algo is the algo= value, or "" for the runtime's default.
	algo runtime.Algorithm
	// burst is the burst= value, or 0 for the runtime's default (max).
	burst int
	// wait is the wait= value, or 0: how long a call may wait for room.
	wait time.Duration
	// mode is the mode= value: runtime.ModeEnforce or runtime.ModeShadow.
	mode runtime.Mode
	// key is empty when the directive has no key=.
	key []*keyPart
	// cost is nil when the directive has no cost= (one unit per call).
	cost *costExpr
	// refund and settle are the refund= and settle= expressions over the
	// method's results (see outcome.go), or nil.
	refund *checkedExpr
	settle *costExpr
	// index is the directive's rank among its method's, from 0.
	index int
	// canonical is, for a copy of a type-level limit made for one method,
	// the limit as declared, whose variable the copy uses.
	canonical *limit
	// multi is set when the method has several limits.
	multi bool
}

// wrapper is one generated RateLimitedT type.
type wrapper struct {
	owner   *types.TypeName
	named   *types.Named
	iface   bool
	byValue bool // a concrete type embedded as T rather than *T
	methods []*wrapperMethod
	// name and ctor are the names of the generated type and constructor.
	name, ctor string
	// constraint is the build constraint of the files that declare the
	// type and its limited methods, or nil.
	constraint constraint.Expr
}

// wrapperMethod is one method of a wrapper: rate-limited when it has
// limits, otherwise forwarded unchanged (interfaces only).
type wrapperMethod struct {
	name string
	// sig is the method's signature as seen through the wrapped type.
	sig *types.Signature
	// limits are the method's limits, in source order; every one must
	// admit a call.
	limits []*limit
}

// pkgModel is what one package asks the generator for.
type pkgModel struct {
	pkg *packages.Package
	// limits are the limits of the package's directives, byFunc the same
	// by method, and owners the types whose methods carry them.
	limits []*limit
	byFunc map[*types.Func][]*limit
	owners []*types.TypeName
	// foreign are the limits of other packages' methods that the
	// package's wrappers use (promoted or embedded methods): the
	// generated file declares a copy, which counts with the original
	// since a limit is counted by name.
	foreign  []*limit
	wrappers []*wrapper
	// directives counts the //ratelimit: comments found, valid or not.
	directives int
	// constraints holds the build constraint of each file, by name.
	constraints map[string]constraint.Expr
	// typeLevel holds the type-level limits by type, and exempt the
	// methods that opt out of them.
	typeLevel map[*types.TypeName]*typeLimits
	exempt    map[*types.Func]token.Position
	// rejected holds the position of the first directive of each method
	// (by methodKey) and type (path/to/pkg.Type) whose directives have
	// problems: for a package outside the run, the types that embed
	// them are errors rather than unlimited.
	rejected map[string]token.Position
	imports  *importResolver
}

// buildModel finds the directives of pkg and checks them. Problems go to
// ds. The wrappers come later (buildWrappers), when the limits of every
// package of the run are known.
func buildModel(pkg *packages.Package, imports *importResolver, ds *diagnostics) *pkgModel {
	m := &pkgModel{pkg: pkg, byFunc: map[*types.Func][]*limit{}, typeLevel: map[*types.TypeName]*typeLimits{}, exempt: map[*types.Func]token.Position{}, rejected: map[string]token.Position{}, imports: imports}
	limits := m.byFunc
	hasOwner := map[*types.TypeName]bool{}
	for _, file := range pkg.Syntax {
		for _, a := range scanFile(pkg.Fset, pkg.TypesInfo, file, ds) {
			if a.fn == nil {
				if tl := buildTypeLimits(pkg, a, file, imports, ds); tl != nil {
					m.typeLevel[a.owner] = tl
					m.limits = append(m.limits, tl.limits...)
					if !hasOwner[a.owner] {
						hasOwner[a.owner] = true
						m.owners = append(m.owners, a.owner)
					}
				} else if len(a.directives) > 0 {
					m.rejected[pkg.PkgPath+"."+a.owner.Name()] = a.directives[0].pos
				}
				continue
			}
			if a.exempt != nil {
				m.exempt[a.fn] = *a.exempt
				if len(a.directives) == 0 {
					continue
				}
			}
			ls := buildLimits(pkg, file, a, imports, ds)
			if ls == nil {
				if len(a.directives) > 0 {
					m.rejected[methodKey(a.fn)] = a.directives[0].pos
				}
				continue
			}
			limits[a.fn] = ls
			m.limits = append(m.limits, ls...)
			if !hasOwner[a.owner] {
				hasOwner[a.owner] = true
				m.owners = append(m.owners, a.owner)
			}
		}
		m.directives += countDirectives(file)
	}
	m.constraints = map[string]constraint.Expr{}
	for _, file := range pkg.Syntax {
		name := pkg.Fset.Position(file.Package).Filename
		m.constraints[name] = fileConstraint(file, name)
	}
	for _, l := range m.limits {
		l.constraint = m.constraints[l.pos.Filename]
	}
	return m
}

// buildWrappers derives the wrappers of m: one for each type with a
// directive, and one for each other type of the package that has a limited
// method by embedding (see embedding.go).
func buildWrappers(m *pkgModel, index *limitIndex, ds *diagnostics) {
	pkg := m.pkg
	lookup := func(fn *types.Func) []*limit {
		if fn.Pkg() == pkg.Types {
			return append(m.declaringTypeLimits(fn, ds), m.byFunc[fn.Origin()]...)
		}
		return index.lookup(fn, ds)
	}
	checkUnknownLimits(m, index, ds)
	owners := append(slices.Clone(m.owners), embeddingOwners(m, lookup)...)
	foreign := map[*limit]bool{}
	for fn, pos := range m.exempt {
		if owner := receiverTypeName(fn); owner == nil || m.typeLevel[owner] == nil {
			ds.errorf(pos, "//ratelimit:exempt on %s, but its type has no type-level //ratelimit: directive to opt out of: remove it", fn.Name())
		}
	}
	for _, owner := range owners {
		ownerLookup := lookup
		if tl := m.typeLevel[owner]; tl != nil {
			// The owner's type-level limits count the methods it gets by
			// embedding too; its own methods have them from lookup.
			ownerLookup = func(fn *types.Func) []*limit {
				if receiverTypeName(fn.Origin()) == owner {
					return lookup(fn)
				}
				return append(tl.forMethod(pkg, fn, false, m.imports, ds), lookup(fn)...)
			}
		}
		w := buildWrapper(pkg, owner, ownerLookup, ds)
		if w == nil || !foreignExprsVisible(pkg, w, ds) {
			continue
		}
		if tl := m.typeLevel[owner]; tl != nil && !slices.ContainsFunc(w.methods, func(wm *wrapperMethod) bool { return len(wm.limits) > 0 }) {
			ds.errorf(tl.a.directives[0].pos, "type %s has a type-level //ratelimit: directive but no method it could limit: declare methods on %s, or put the directive on the type whose methods it should count", owner.Name(), owner.Name())
			continue
		}
		if !checkHeldWithTypeLimits(w, ds) {
			continue
		}
		exprs := []constraint.Expr{m.constraints[pkg.Fset.Position(owner.Pos()).Filename]}
		for _, wm := range w.methods {
			for _, l := range wm.limits {
				// The directive's file may be another package's, under
				// constraints of its own: the method exists only there.
				exprs = append(exprs, l.constraint)
				decl := l
				if l.canonical != nil {
					decl = l.canonical // a method's copy of a type-level limit
				}
				if decl.owner.Pkg() != pkg.Types && !foreign[decl] {
					foreign[decl] = true
					m.foreign = append(m.foreign, decl)
				}
			}
		}
		w.constraint = andAll(exprs)
		m.wrappers = append(m.wrappers, w)
	}
	if obj := pkg.Types.Scope().Lookup(limitsFunc); obj != nil && m.declaresLimitsFunc() {
		ds.errorf(pkg.Fset.Position(obj.Pos()), "cannot generate %s, which returns the package's limits for runtime.Overrides.AddLimits: the package already declares %s here; rename it", limitsFunc, limitsFunc)
	}
}

// checkHeldWithTypeLimits checks the methods of w whose own limits are
// settled once the call returns (refund=, settle=, concurrency=) against
// the type-level limits they also count against, which buildLimits did
// not see: none may have a cost computed per call (see
// checkOutcomeLimits). It returns false if any does.
func checkHeldWithTypeLimits(w *wrapper, ds *diagnostics) bool {
	ok := true
	for _, wm := range w.methods {
		typeLevel := slices.ContainsFunc(wm.limits, func(l *limit) bool { return l.canonical != nil })
		if typeLevel && (settled(wm) || holdsPermit(wm)) && !checkOutcomeLimits(wm.limits, ds) {
			ok = false
		}
	}
	return ok
}

// countDirectives counts the comments of file that start with the
// directive prefix, wherever they are.
func countDirectives(file *ast.File) int {
	n := 0
	for _, g := range file.Comments {
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, parse.Prefix) {
				n++
			}
		}
	}
	return n
}

// buildLimits checks the directives of one method and returns its limits,
// in source order. It returns nil if they have any problem.
func buildLimits(pkg *packages.Package, file *ast.File, a *annotated, imports *importResolver, ds *diagnostics) []*limit {
	ok := true
	for _, d := range a.directives {
		for _, e := range d.errs {
			ds.errorf(e.Pos, "%s", e.Msg)
			ok = false
		}
	}
	ok = checkLimitNames(a, ds) && ok

	sig := a.fn.Type().(*types.Signature)
	if !returnsError(sig) {
		got := "nothing"
		if n := sig.Results().Len(); n > 0 {
			got = types.TypeString(sig.Results().At(n-1).Type(), types.RelativeTo(pkg.Types))
		}
		ds.errorf(a.namePos, "method %s.%s has a //ratelimit: directive but its last result is %s, not error: the wrapper reports a denied call through an error result", a.owner.Name(), a.fn.Name(), got)
		ok = false
	}

	tparams := sig.RecvTypeParams()
	if a.iface {
		if named, isNamed := a.owner.Type().(*types.Named); isNamed {
			tparams = named.TypeParams()
		}
	}
	var out []*limit
	for i, d := range a.directives {
		if d.parsed == nil {
			ok = false
			continue
		}
		l := newLimit(a, d, i)
		if !checkLimitExprs(pkg, file, d, sig, tparams, imports, l, ds) {
			ok = false
			if l.key == nil && l.cost == nil && (len(d.parsed.Key) > 0 || d.parsed.Cost != nil) {
				continue
			}
		}
		if len(d.errs) == 0 && !checkLimitValues(l, d, ds) {
			ok = false
		}
		out = append(out, l)
	}
	if ok && !checkOutcomeLimits(out, ds) {
		ok = false
	}
	if !ok {
		return nil
	}
	return out
}

// newLimit returns the limit of a's i-th directive d, which parsed,
// without its key, cost and max expression.
func newLimit(a *annotated, d *directive, i int) *limit {
	l := &limit{
		fn:       a.fn,
		owner:    a.owner,
		pos:      d.pos,
		name:     limitName(a, d, i),
		window:   d.parsed.Window,
		calendar: d.parsed.Calendar,
		max:      d.parsed.Max,
		algo:     d.parsed.Algorithm,
		burst:    d.parsed.Burst,
		wait:     d.parsed.Wait,
		mode:     d.parsed.Mode,
		index:    i,
		multi:    len(a.directives) > 1,
	}
	if d.parsed.MaxExpr != nil {
		l.maxText = d.parsed.MaxExpr.Text
	}
	return l
}

// checkLimitExprs type-checks the key, cost and max expression of
// directive d, on a method with signature sig, and sets them on l. It
// reports problems to ds and returns false if there are any.
func checkLimitExprs(pkg *packages.Package, file *ast.File, d *directive, sig *types.Signature, tparams *types.TypeParamList, imports *importResolver, l *limit, ds *diagnostics) bool {
	if len(d.parsed.Key) == 0 && d.parsed.Cost == nil && d.parsed.MaxExpr == nil && d.parsed.Refund == nil && d.parsed.Settle == nil {
		return true
	}
	es, err := newExprScope(pkg.Fset, pkg.Types, pkg.TypesInfo.Scopes[file], d.comment, sig, tparams, imports)
	if err != nil {
		ds.errorf(d.pos, "cannot check the directive's expressions: %v", err)
		return false
	}
	ok := true
	for _, e := range d.parsed.Key {
		kp := es.checkKey(e, ds)
		if kp == nil {
			ok = false
			continue
		}
		l.key = append(l.key, kp)
	}
	if len(l.key) > 0 && len(l.key) == len(d.parsed.Key) && !checkKeyVaries(l.key, d.parsed.Key, ds) {
		ok = false
	}
	if d.parsed.Cost != nil {
		if l.cost = es.checkCost(*d.parsed.Cost, ds); l.cost == nil {
			ok = false
		}
	}
	if d.parsed.MaxExpr != nil {
		if l.maxExpr = es.checkMax(*d.parsed.MaxExpr, ds); l.maxExpr == nil {
			ok = false
		} else if n, static := l.maxExpr.static(); static {
			l.max = n
		}
	}
	if (d.parsed.Refund != nil || d.parsed.Settle != nil) && !es.checkOutcome(d.parsed, sig, l, ds) {
		ok = false
	}
	return ok
}

// limitName returns the name of the limit of a's i-th directive d: its
// name=, or for the first the method's full name, import path included
// (example.com/shop/orders.Service.Get). Limits are counted by name, and
// one limiter usually serves a whole program, so a default name must be
// unique in a program: with Type.Method alone, orders.Service.Get and
// invoices.Service.Get would share one count.
func limitName(a *annotated, d *directive, i int) string {
	if d.parsed != nil && d.parsed.Name != "" {
		return d.parsed.Name
	}
	if i == 0 && a.fn == nil {
		return a.owner.Pkg().Path() + "." + a.owner.Name()
	}
	if i == 0 {
		return defaultLimitName(a.owner, a.fn)
	}
	return ""
}

// defaultLimitName is the name of a method's only (or first) limit when
// its directive has no name=. Every instantiation of a generic type shares
// it: the key, not the type argument, is what separates counts.
func defaultLimitName(owner *types.TypeName, fn *types.Func) string {
	return owner.Pkg().Path() + "." + owner.Name() + "." + fn.Name()
}

// checkLimitNames checks that the limits of a method with several
// directives have distinct names, spelt out for all but the first: the
// runtime counts a limit by its name and key, and a denial names the limit,
// so two unnamed limits would be indistinguishable.
func checkLimitNames(a *annotated, ds *diagnostics) bool {
	if len(a.directives) < 2 {
		return true
	}
	ok := true
	method := a.label()
	first := map[string]token.Position{}
	for i, d := range a.directives {
		if d.parsed == nil {
			continue
		}
		opt, named := d.parsed.Lookup("name")
		if named && d.parsed.Name == "" {
			continue // an invalid name=, reported by the parser
		}
		if !named && i > 0 {
			ds.errorf(d.pos, "%s has several //ratelimit: lines: give each after the first its own name=, which keeps its count apart and names it in denials; add name=..., e.g. name=%s.%s", method, method, windowNickname(d.parsed.Window, d.parsed.Calendar))
			ok = false
			continue
		}
		name := limitName(a, d, i)
		pos := d.pos
		if named {
			pos = opt.ValuePos
		}
		if at, dup := first[name]; dup {
			ds.errorf(pos, "%s already has a limit named %q (the //ratelimit: line at %s); give each limit of a method its own name=", method, name, at)
			ok = false
			continue
		}
		first[name] = d.pos
	}
	return ok
}

// windowNickname suggests a name suffix for a limit with window w, for
// messages: "hourly" for 1h, "per-10m" for 10m, "monthly" for 1mo.
func windowNickname(w time.Duration, c runtime.Calendar) string {
	switch c.Period {
	case runtime.Day:
		return "daily"
	case runtime.Week:
		return "weekly"
	case runtime.Month:
		return "monthly"
	case runtime.Year:
		return "yearly"
	}
	switch w {
	case time.Second:
		return "per-second"
	case time.Minute:
		return "per-minute"
	case time.Hour:
		return "hourly"
	case 24 * time.Hour:
		return "daily"
	case 7 * 24 * time.Hour:
		return "weekly"
	}
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if w%u.d == 0 {
			return fmt.Sprintf("per-%d%s", w/u.d, u.unit)
		}
	}
	return "per-" + w.String()
}

// checkLimitValues checks what only the options together decide: that a
// constant cost can ever be admitted and that the runtime accepts the
// limit, a sliding log's max included (runtime.MaxSlidingLog). It also
// warns about a sliding log whose full key takes much Redis memory. What
// depends on a max computed per call is left to the runtime, which
// validates each call. It returns false on errors.
func checkLimitValues(l *limit, d *directive, ds *diagnostics) bool {
	ok := true
	capacity := l.capacity()
	capacityKnown := !l.perCallMax() || l.burstApplies() && l.burst > 0
	if l.cost != nil && l.cost.value != nil {
		subject := "cost " + l.cost.text
		if v := l.cost.value.ExactString(); v != l.cost.text {
			subject += " (" + v + ")"
		}
		pos := d.parsed.Cost.Pos
		switch c, exact := l.cost.constantCost(); {
		case exact && c == 0:
			ds.errorf(pos, "%s is zero: a call that costs nothing is admitted and never counted, so this limit would do nothing; remove the directive, or give a cost of at least 1", subject)
			ok = false
		case exact && c < 0 || l.cost.value.Kind() == constant.Int && constant.Sign(l.cost.value) < 0:
			ds.errorf(pos, "%s is negative; a cost must be at least 1 (or, when computed, 0 for a call that is not counted)", subject)
			ok = false
		case capacityKnown && (!exact || c > int64(capacity)):
			ds.errorf(pos, "%s is more than the limit's capacity of %d (%s): such a call could never be admitted", subject, capacity, capacityWords(l))
			ok = false
		case l.algorithm() == runtime.SlidingLog && (!exact || c > runtime.MaxSlidingLog):
			ds.errorf(pos, "%s is more than a sliding log's largest max, %d, so such a call could never be admitted; use algo=sliding-window (constant memory, never over max) for larger costs", subject, runtime.MaxSlidingLog)
			ok = false
		}
	}
	if !l.perCallMax() && l.algorithm() == runtime.SlidingLog && l.max > runtime.MaxSlidingLog {
		opt, _ := d.parsed.Lookup("max")
		subject := "max=" + opt.Value
		if v := fmt.Sprint(l.max); strings.ReplaceAll(opt.Value, "_", "") != v {
			subject += " (" + v + ")"
		}
		ds.errorf(opt.ValuePos, "%s is too large for a sliding log, which stores every admission of its window: it can be at most %d, so that a key takes at most %s of Redis; use algo=sliding-window (constant memory, never over max)", subject, runtime.MaxSlidingLog, slidingLogMemory(runtime.MaxSlidingLog))
		return false
	}
	if ok && !l.perCallMax() {
		if pos, msg := invalidLimit(l, d); msg != "" {
			ds.errorf(pos, "%s", msg)
			ok = false
		}
	}
	if ok && !l.perCallMax() && l.algorithm() == runtime.SlidingLog && l.max > slidingLogWarnAbove {
		opt, _ := d.parsed.Lookup("max")
		ds.warnf(opt.ValuePos, "sliding-log stores every admission of its window, 7 bytes each: at max=%d a full key takes about %s in Redis; consider algo=sliding-window (constant memory, never over max)", l.max, slidingLogMemory(l.max))
	}
	return ok
}

// invalidLimit returns, if the runtime's Limit.Validate refuses l, whose
// options parsed, a message saying why and what to change in directive d,
// for the position returned. Parsing has checked every option on its own,
// so what remains is the runtime's bound on the numbers it counts exactly,
// which the window, max and burst decide together, and which a shorter
// window satisfies: the message is for window=, unless even the shortest
// window would not do.
func invalidLimit(l *limit, d *directive) (token.Position, string) {
	rl := l.runtimeLimit()
	if rl.Name == "" {
		rl.Name = "unnamed" // a missing name= is reported already
	}
	err := rl.Validate()
	if err == nil {
		return token.Position{}, ""
	}
	if !rl.Calendar.IsZero() {
		return d.pos, fmt.Sprintf("the runtime refuses this limit: %v", err)
	}
	rl.Window = time.Microsecond
	if rl.Validate() != nil {
		return d.pos, fmt.Sprintf("the runtime refuses this limit: %v", err)
	}
	window, _ := d.parsed.Lookup("window")
	what := "algo=" + string(l.algorithm())
	if l.burstApplies() {
		what += fmt.Sprintf(" with a burst of %d", l.capacity())
	}
	return window.ValuePos, fmt.Sprintf("window=%s is too long for %s: %v", window.Value, what, err)
}

// capacityWords explains where a limit's capacity comes from.
func capacityWords(l *limit) string {
	switch {
	case l.burstApplies() && l.burst > 0:
		return "its burst"
	case l.burstApplies():
		return "its burst, which is max when burst= is absent"
	}
	return "its max"
}

// returnsError reports whether sig's last result is error itself.
func returnsError(sig *types.Signature) bool {
	n := sig.Results().Len()
	return n > 0 && types.Identical(sig.Results().At(n-1).Type(), types.Universe.Lookup("error").Type())
}

// foreignExprsVisible reports, for the limits that w's methods get from
// directives of another package, whether their keys and costs use only
// what that package exports: the generated code, in w's package, spells
// them.
func foreignExprsVisible(pkg *packages.Package, w *wrapper, ds *diagnostics) bool {
	for _, wm := range w.methods {
		for _, l := range wm.limits {
			if l.owner.Pkg() == pkg.Types {
				continue // declared here: its expressions are this package's
			}
			for _, ce := range l.exprs() {
				if ce.unexported != "" {
					ds.errorf(pkg.Fset.Position(w.owner.Pos()), "cannot wrap %s: its method %s comes from %s, whose limit (%s) uses %s in %q, which package %s does not export; export it, or key on exported names", w.owner.Name(), wm.name, l.owner.Name(), l.pos, ce.unexported, ce.text, l.owner.Pkg().Path())
					return false
				}
			}
		}
	}
	return true
}

// buildWrapper derives the wrapper of owner, which has at least one valid
// limit.
func buildWrapper(pkg *packages.Package, owner *types.TypeName, limits func(*types.Func) []*limit, ds *diagnostics) *wrapper {
	named, ok := owner.Type().(*types.Named)
	pos := pkg.Fset.Position(owner.Pos())
	if !ok {
		ds.errorf(pos, "%s is a type alias: declare the methods' type as a defined type to have it wrapped", owner.Name())
		return nil
	}
	w := &wrapper{owner: owner, named: named}
	w.name, w.ctor = wrapperNames(owner.Name())

	if iface, isIface := named.Underlying().(*types.Interface); isIface {
		w.iface = true
		if !iface.IsMethodSet() {
			ds.errorf(pos, "interface %s has type terms, so it can only constrain type parameters: there is nothing to wrap", owner.Name())
			return nil
		}
		for i := 0; i < iface.NumMethods(); i++ {
			fn := iface.Method(i)
			if !fn.Exported() && fn.Pkg() != pkg.Types {
				ds.errorf(pos, "cannot wrap %s: it has the unexported method %s of package %s, which code outside that package cannot implement", owner.Name(), fn.Name(), fn.Pkg().Path())
				return nil
			}
			w.methods = append(w.methods, &wrapperMethod{name: fn.Name(), sig: fn.Type().(*types.Signature), limits: limits(fn)})
		}
	} else {
		w.byValue = true
		for i := 0; i < named.NumMethods(); i++ {
			if _, ptr := named.Method(i).Type().(*types.Signature).Recv().Type().(*types.Pointer); ptr {
				w.byValue = false
			}
		}
		var recv types.Type = named
		if !w.byValue {
			recv = types.NewPointer(named)
		}
		ms := types.NewMethodSet(recv)
		for i := 0; i < ms.Len(); i++ {
			fn := ms.At(i).Obj().(*types.Func)
			if ls := limits(fn); ls != nil {
				w.methods = append(w.methods, &wrapperMethod{name: fn.Name(), sig: fn.Type().(*types.Signature), limits: ls})
			}
		}
	}

	// Methods promoted from another package may mention types that the
	// generated file cannot name.
	for _, wm := range w.methods {
		var hidden types.Object
		visitPackages(wm.sig, func(p *types.Package, obj types.Object) {
			if hidden == nil && obj != nil && p != pkg.Types && !obj.Exported() {
				hidden = obj
			}
		})
		if hidden != nil {
			ds.errorf(pos, "cannot wrap %s: its method %s uses %s.%s, which package %s does not export", owner.Name(), wm.name, hidden.Pkg().Name(), hidden.Name(), hidden.Pkg().Path())
			return nil
		}
	}

	for _, name := range []string{w.name, w.ctor} {
		if obj := pkg.Types.Scope().Lookup(name); obj != nil {
			ds.errorf(pos, "cannot generate %s for %s: the package already declares %s at %s; rename it", name, owner.Name(), name, pkg.Fset.Position(obj.Pos()))
			return nil
		}
	}
	return w
}

// wrapperNames returns the names of the wrapper type and constructor of the
// type called typeName, unexported when typeName is.
func wrapperNames(typeName string) (typ, ctor string) {
	r, _ := utf8.DecodeRuneInString(typeName)
	if unicode.IsUpper(r) {
		return "RateLimited" + typeName, "NewRateLimited" + typeName
	}
	return "rateLimited" + upperFirst(typeName), "newRateLimited" + upperFirst(typeName)
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// generatedNames returns the package-level names the model will declare,
// whose absence from the loaded package (the generated file is excluded
// while loading) is not an error.
func (m *pkgModel) generatedNames() []string {
	var out []string
	if m.declaresLimitsFunc() {
		out = append(out, limitsFunc)
	}
	for _, w := range m.wrappers {
		out = append(out, w.name, w.ctor)
	}
	return out
}

// declaresLimitsFunc reports whether the generated files of m include the
// unconstrained one, which declares the limits function (see
// emitPackage): m has wrappers, and a wrapper or limit that is under no
// build constraint.
func (m *pkgModel) declaresLimitsFunc() bool {
	if len(m.wrappers) == 0 {
		return false
	}
	if len(m.foreign) > 0 ||
		slices.ContainsFunc(m.wrappers, func(w *wrapper) bool { return w.constraint == nil }) ||
		slices.ContainsFunc(m.limits, func(l *limit) bool { return l.constraint == nil }) {
		return true
	}
	return false
}
