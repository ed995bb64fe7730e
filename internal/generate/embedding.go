package generate

import (
	"bytes"
	"go/types"
	"os"
	"strings"

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
// are read on demand.
type limitIndex struct {
	byKey map[string][]*limit
	// models holds the models of the indexed packages, by path, for their
	// type-level limits.
	models map[string]*pkgModel
	// indexed holds the package paths whose limits are in byKey.
	indexed map[string]bool
	// load reads the directives of a package outside the run, or
	// returns nil.
	load func(path string) *pkgModel
}

func newLimitIndex(models []*pkgModel, load func(string) *pkgModel) *limitIndex {
	x := &limitIndex{byKey: map[string][]*limit{}, models: map[string]*pkgModel{}, indexed: map[string]bool{}, load: load}
	for _, m := range models {
		x.add(m)
	}
	return x
}

func (x *limitIndex) add(m *pkgModel) {
	x.indexed[m.pkg.PkgPath] = true
	x.models[m.pkg.PkgPath] = m
	for fn, ls := range m.byFunc {
		x.byKey[methodKey(fn)] = ls
	}
}

// lookup returns the limits of another package's method fn, its type's
// type-level limits first, or nil.
func (x *limitIndex) lookup(fn *types.Func, ds *diagnostics) []*limit {
	p := fn.Pkg()
	if p == nil {
		return nil
	}
	if !x.indexed[p.Path()] {
		x.indexed[p.Path()] = true
		// The standard library has no directives.
		if first, _, _ := strings.Cut(p.Path(), "/"); strings.Contains(first, ".") {
			if m := x.load(p.Path()); m != nil {
				x.add(m)
			}
		}
	}
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
	has := map[*types.TypeName]bool{}
	for _, o := range m.owners {
		has[o] = true
	}
	var out []*types.TypeName
	scope := m.pkg.Types.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() || has[tn] {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		var ms *types.MethodSet
		switch u := named.Underlying().(type) {
		case *types.Interface:
			if u.NumEmbeddeds() == 0 {
				continue
			}
			ms = types.NewMethodSet(named)
		case *types.Struct:
			embeds := false
			for i := 0; i < u.NumFields(); i++ {
				embeds = embeds || u.Field(i).Embedded()
			}
			if !embeds {
				continue
			}
			ms = types.NewMethodSet(types.NewPointer(named))
		default:
			continue
		}
		for i := 0; i < ms.Len(); i++ {
			if fn, ok := ms.At(i).Obj().(*types.Func); ok && limits(fn) != nil {
				out = append(out, tn)
				break
			}
		}
	}
	return out
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

// loadDirectives returns a function that reads the directives of a
// package outside the run. Problems in them are that package's to report
// when it is generated; a package whose limits have problems is left out.
func loadDirectives(pcfg func() *packages.Config, imports *importResolver) func(string) *pkgModel {
	return func(path string) *pkgModel {
		// Listing the files is cheap; type-checking a package from
		// source is not, and most embedded types have no directive.
		files := pcfg()
		files.Mode = packages.NeedName | packages.NeedFiles
		listed, err := packages.Load(files, path)
		if err != nil || len(listed) != 1 || !anyFileMentions(listed[0].GoFiles, parse.Prefix) {
			return nil
		}
		pkgs, err := packages.Load(pcfg(), path)
		if err != nil || len(pkgs) != 1 || pkgs[0].Types == nil || pkgs[0].TypesInfo == nil {
			return nil
		}
		return buildModel(pkgs[0], imports, &diagnostics{nearMissWarnings: true})
	}
}
