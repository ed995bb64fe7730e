package generate

import (
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"go/types"
	"maps"
	"os"
	"slices"

	"golang.org/x/tools/go/packages"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

// A limited method is limited wherever it is declared: a type that gets
// the method by embedding (a struct embedding a limited type, an interface
// embedding a limited interface) gets a wrapper too, with the method's
// limits, even without a directive of its own. When the method comes from
// another package, the generated file declares a copy of its limit, which
// counts together with the original because a limit is counted by name.
//
// limitIndex finds the limits of other packages' methods: those of the
// run's packages, and those of packages outside the run, whose directives
// are read once for the whole run (prefetch). Whether a package can have
// directives is not guessed from its import path: a module may be called
// "shop", with no dot, and the standard library is simply a package whose
// files mention no directive.
type limitIndex struct {
	byKey map[string][]*limit
	// models holds the models of the indexed packages, by path, for their
	// type-level limits.
	models map[string]*pkgModel
	// indexed holds the package paths whose limits are in byKey.
	indexed map[string]bool
	// outside holds the paths of the indexed packages that are not part
	// of the run, whose problems the run does not report otherwise.
	outside map[string]bool
	// failed holds, by path, why a package outside the run could not be
	// read: its methods' limits are unknown.
	failed map[string]error
	// load reads the directives of packages outside the run and returns
	// the models of those that have any.
	load func(paths []string) ([]*pkgModel, map[string]error)
}

func newLimitIndex(models []*pkgModel, load func([]string) ([]*pkgModel, map[string]error)) *limitIndex {
	x := &limitIndex{byKey: map[string][]*limit{}, models: map[string]*pkgModel{}, indexed: map[string]bool{}, outside: map[string]bool{}, failed: map[string]error{}, load: load}
	for _, m := range models {
		x.add(m)
	}
	x.prefetch(models)
	return x
}

func (x *limitIndex) add(m *pkgModel) {
	x.indexed[m.pkg.PkgPath] = true
	x.models[m.pkg.PkgPath] = m
	for fn, ls := range m.byFunc {
		x.byKey[methodKey(fn)] = ls
	}
}

// prefetch indexes, in one load, the packages outside the run that declare
// a method that a type of the run gets by embedding.
func (x *limitIndex) prefetch(models []*pkgModel) {
	var paths []string
	for _, m := range models {
		for _, tn := range embeddingTypes(m) {
			forEachForeignMethod(m, tn, func(fn *types.Func) {
				if p := fn.Pkg().Path(); !x.indexed[p] && !slices.Contains(paths, p) {
					paths = append(paths, p)
				}
			})
		}
	}
	x.ensure(paths)
}

// ensure indexes the packages of paths that are not indexed yet.
func (x *limitIndex) ensure(paths []string) {
	paths = slices.DeleteFunc(slices.Clone(paths), func(p string) bool { return x.indexed[p] })
	if len(paths) == 0 {
		return
	}
	for _, p := range paths {
		x.indexed[p] = true
		x.outside[p] = true
	}
	models, failed := x.load(paths)
	for _, m := range models {
		x.add(m)
	}
	maps.Copy(x.failed, failed)
}

// lookup returns the limits of another package's method fn, its type's
// type-level limits first, or nil.
func (x *limitIndex) lookup(fn *types.Func, ds *diagnostics) []*limit {
	p := fn.Pkg()
	if p == nil {
		return nil
	}
	x.ensure([]string{p.Path()})
	var out []*limit
	if m := x.models[p.Path()]; m != nil {
		// The declaring package's own view of the method, whose scope
		// its type-level keys are checked in.
		if owner := receiverTypeName(fn.Origin()); owner != nil {
			if tn, ok := m.pkg.Types.Scope().Lookup(owner.Name()).(*types.TypeName); ok {
				if own, _, _ := types.LookupFieldOrMethod(tn.Type(), true, m.pkg.Types, fn.Name()); own != nil {
					if f, ok := own.(*types.Func); ok {
						out = m.declaringTypeLimits(f, ds)
					}
				}
			}
		}
	}
	return append(out, x.byKey[methodKey(fn)]...)
}

// methodKey names a method across type-checks of its package:
// path/to/pkg.Type.Method.
func methodKey(fn *types.Func) string {
	fn = fn.Origin()
	owner := receiverTypeName(fn)
	if owner == nil || fn.Pkg() == nil {
		return ""
	}
	return fn.Pkg().Path() + "." + owner.Name() + "." + fn.Name()
}

// embeddingOwners returns the package-level types of m, other than those
// with directives, that embed a limited method.
func embeddingOwners(m *pkgModel, limits func(*types.Func) []*limit) []*types.TypeName {
	var out []*types.TypeName
	for _, tn := range embeddingTypes(m) {
		if slices.Contains(m.owners, tn) {
			continue
		}
		ms := embeddedMethodSet(tn)
		for i := 0; i < ms.Len(); i++ {
			if fn, ok := ms.At(i).Obj().(*types.Func); ok && limits(fn) != nil {
				out = append(out, tn)
				break
			}
		}
	}
	return out
}

// embeddingTypes returns the package-level defined types of m, in name
// order, that embed a field or an interface.
func embeddingTypes(m *pkgModel) []*types.TypeName {
	var out []*types.TypeName
	scope := m.pkg.Types.Scope()
	for _, name := range scope.Names() {
		if tn, ok := scope.Lookup(name).(*types.TypeName); ok && embeddedMethodSet(tn) != nil {
			out = append(out, tn)
		}
	}
	return out
}

// embeddedMethodSet returns the method set that a wrapper of tn would
// cover (that of *T for a struct), or nil if tn is an alias or embeds
// nothing.
func embeddedMethodSet(tn *types.TypeName) *types.MethodSet {
	named, ok := tn.Type().(*types.Named)
	if !ok || tn.IsAlias() {
		return nil
	}
	switch u := named.Underlying().(type) {
	case *types.Interface:
		if u.NumEmbeddeds() > 0 {
			return types.NewMethodSet(named)
		}
	case *types.Struct:
		for i := 0; i < u.NumFields(); i++ {
			if u.Field(i).Embedded() {
				return types.NewMethodSet(types.NewPointer(named))
			}
		}
	}
	return nil
}

// forEachForeignMethod calls f for each method of tn's method set that is
// declared in another package than m's.
func forEachForeignMethod(m *pkgModel, tn *types.TypeName, f func(*types.Func)) {
	ms := embeddedMethodSet(tn)
	if ms == nil {
		return
	}
	for i := 0; i < ms.Len(); i++ {
		if fn, ok := ms.At(i).Obj().(*types.Func); ok && fn.Pkg() != nil && fn.Pkg() != m.pkg.Types {
			f(fn)
		}
	}
}

// checkUnknownLimits reports the types of m that get a method by embedding
// from a package outside the run whose limits are unknown: the package
// could not be read, or the method's directives (or its type's type-level
// ones) have problems, which that package's own run reports. Generating
// a wrapper without those limits would leave the method unlimited without
// a word.
func checkUnknownLimits(m *pkgModel, x *limitIndex, ds *diagnostics) {
	for _, tn := range embeddingTypes(m) {
		pos := m.pkg.Fset.Position(tn.Pos())
		reported := map[string]bool{}
		forEachForeignMethod(m, tn, func(fn *types.Func) {
			path := fn.Pkg().Path()
			if !x.outside[path] || reported[path] {
				return
			}
			if err, failed := x.failed[path]; failed {
				reported[path] = true
				ds.errorf(pos, "cannot tell whether %s's method %s, from package %s, is rate-limited: reading that package failed: %v", tn.Name(), fn.Name(), path, err)
				return
			}
			if at, bad := x.rejected(fn); bad {
				ds.errorf(pos, "%s gets %s from package %s, whose //ratelimit: directive at %s has problems, so no wrapper could keep its limit: run ratelimitgen in %s to see them", tn.Name(), fn.Name(), path, at, path)
			}
		})
	}
}

// rejected returns the position of the first directive of fn, or of its
// declaring type, that has problems in its package outside the run.
func (x *limitIndex) rejected(fn *types.Func) (token.Position, bool) {
	m := x.models[fn.Pkg().Path()]
	if m == nil {
		return token.Position{}, false
	}
	if pos, ok := m.rejected[methodKey(fn)]; ok {
		return pos, true
	}
	if owner := receiverTypeName(fn.Origin()); owner != nil {
		pos, ok := m.rejected[fn.Pkg().Path()+"."+owner.Name()]
		return pos, ok
	}
	return token.Position{}, false
}

// anyFileMentions reports whether one of the files contains s.
func anyFileMentions(paths []string, s string) bool {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// loadDirectives returns a function that reads the directives of
// packages outside the run. Problems in them are each package's to report
// when it is generated; here a package whose limits have problems is kept,
// with the methods concerned in its model's rejected.
func loadDirectives(pcfg func() *packages.Config, imports *importResolver) func([]string) ([]*pkgModel, map[string]error) {
	return func(paths []string) ([]*pkgModel, map[string]error) {
		failed := map[string]error{}
		fail := func(paths []string, err error) ([]*pkgModel, map[string]error) {
			for _, p := range paths {
				failed[p] = err
			}
			return nil, failed
		}
		// Listing files is cheap; type-checking a package from source is
		// not, and most embedded types (all of the standard library's)
		// have no directive.
		files := pcfg()
		files.Mode = packages.NeedName | packages.NeedFiles
		listed, err := packages.Load(files, paths...)
		if err != nil {
			return fail(paths, err)
		}
		var mention []string
		for _, p := range listed {
			if len(p.Errors) > 0 {
				failed[p.PkgPath] = errors.New(p.Errors[0].Msg)
			} else if anyFileMentions(p.GoFiles, parse.Prefix) {
				mention = append(mention, p.PkgPath)
			}
		}
		if len(mention) == 0 {
			return nil, failed
		}
		pkgs, err := packages.Load(pcfg(), mention...)
		if err != nil {
			return fail(mention, err)
		}
		var out []*pkgModel
		for _, p := range pkgs {
			if p.Types == nil || p.TypesInfo == nil {
				failed[p.PkgPath] = fmt.Errorf("it has no type information")
				continue
			}
			out = append(out, buildModel(p, imports, &diagnostics{nearMissWarnings: true}))
		}
		return out, failed
	}
}
