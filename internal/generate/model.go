package generate

import (
	"go/ast"
	"go/types"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/packages"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// limit is a valid directive: one runtime.Limit, declared once in the
// generated file and used by every wrapper of its method.
type limit struct {
	// fn is the method the directive is on (not an instance of it).
	fn    *types.Func
	owner *types.TypeName
	// name is the runtime.Limit's Name: name= or Type.Method.
	name   string
	window time.Duration
	max    int
	// key is empty when the directive has no key=.
	key []*keyPart
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
}

// wrapperMethod is one method of a wrapper: rate-limited when limit is set,
// otherwise forwarded unchanged (interfaces only).
type wrapperMethod struct {
	name string
	// sig is the method's signature as seen through the wrapped type.
	sig   *types.Signature
	limit *limit
}

// pkgModel is what one package asks the generator for.
type pkgModel struct {
	pkg      *packages.Package
	limits   []*limit
	wrappers []*wrapper
	// directives counts the //ratelimit: comments found, valid or not.
	directives int
}

// buildModel finds the directives of pkg, checks them and derives the
// wrappers to generate. Problems go to ds.
func buildModel(pkg *packages.Package, ds *diagnostics) *pkgModel {
	m := &pkgModel{pkg: pkg}
	limits := map[*types.Func]*limit{}
	var owners []*types.TypeName
	hasOwner := map[*types.TypeName]bool{}
	for _, file := range pkg.Syntax {
		for _, a := range scanFile(pkg.Fset, pkg.TypesInfo, file, ds) {
			l := buildLimit(pkg, file, a, ds)
			if l == nil {
				continue
			}
			limits[a.fn] = l
			m.limits = append(m.limits, l)
			if !hasOwner[a.owner] {
				hasOwner[a.owner] = true
				owners = append(owners, a.owner)
			}
		}
		m.directives += countDirectives(file)
	}
	for _, owner := range owners {
		if w := buildWrapper(pkg, owner, limits, ds); w != nil {
			m.wrappers = append(m.wrappers, w)
		}
	}
	return m
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

// buildLimit checks the directives of one method. It returns nil if they
// have any problem.
func buildLimit(pkg *packages.Package, file *ast.File, a *annotated, ds *diagnostics) *limit {
	ok := true
	for i, d := range a.directives {
		for _, e := range d.errs {
			ds.errorf(e.Pos, "%s", e.Msg)
			ok = false
		}
		if i > 0 {
			ds.errorf(d.pos, "several //ratelimit: lines on one method are not supported yet: keep one on %s.%s", a.owner.Name(), a.fn.Name())
			ok = false
		}
	}

	sig := a.fn.Type().(*types.Signature)
	if !returnsError(sig) {
		got := "nothing"
		if n := sig.Results().Len(); n > 0 {
			got = types.TypeString(sig.Results().At(n-1).Type(), types.RelativeTo(pkg.Types))
		}
		ds.errorf(a.namePos, "method %s.%s has a //ratelimit: directive but its last result is %s, not error: the wrapper reports a denied call through an error result", a.owner.Name(), a.fn.Name(), got)
		ok = false
	}

	d := a.directives[0]
	if d.parsed == nil {
		return nil
	}
	var key []*keyPart
	if len(d.parsed.Key) > 0 {
		tparams := sig.RecvTypeParams()
		if a.iface {
			if named, isNamed := a.owner.Type().(*types.Named); isNamed {
				tparams = named.TypeParams()
			}
		}
		ks, err := newKeyScope(pkg.Fset, pkg.Types, pkg.TypesInfo.Scopes[file], d.comment, sig, tparams)
		if err != nil {
			ds.errorf(d.pos, "cannot check the key: %v", err)
			return nil
		}
		for _, e := range d.parsed.Key {
			kp := ks.check(e, ds)
			if kp == nil {
				ok = false
				continue
			}
			key = append(key, kp)
		}
	}
	if !ok {
		return nil
	}
	name := d.parsed.Name
	if name == "" {
		name = a.owner.Name() + "." + a.fn.Name()
	}
	return &limit{
		fn:     a.fn,
		owner:  a.owner,
		name:   name,
		window: d.parsed.Window,
		max:    d.parsed.Max,
		key:    key,
	}
}

// returnsError reports whether sig's last result is error itself.
func returnsError(sig *types.Signature) bool {
	n := sig.Results().Len()
	return n > 0 && types.Identical(sig.Results().At(n-1).Type(), types.Universe.Lookup("error").Type())
}

// buildWrapper derives the wrapper of owner, which has at least one valid
// limit.
func buildWrapper(pkg *packages.Package, owner *types.TypeName, limits map[*types.Func]*limit, ds *diagnostics) *wrapper {
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
			w.methods = append(w.methods, &wrapperMethod{name: fn.Name(), sig: fn.Type().(*types.Signature), limit: limits[fn.Origin()]})
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
			if l := limits[fn.Origin()]; l != nil {
				w.methods = append(w.methods, &wrapperMethod{name: fn.Name(), sig: fn.Type().(*types.Signature), limit: l})
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
	for _, w := range m.wrappers {
		out = append(out, w.name, w.ctor)
	}
	return out
}
