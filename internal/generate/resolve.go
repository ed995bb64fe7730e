package generate

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// importResolver finds the package a directive means by a qualifier that
// the source file does not import, such as strings in
// key=strings.ToLower(req.Email). Go rejects an import used only in a
// comment, so a directive may use any package: the generated file imports
// it. The rule, first match wins:
//
//  1. the imports of the file that declares the method (go/types sees
//     these without help);
//  2. the standard library; when several of its packages have the name
//     (rand, template), the one the package imports elsewhere, if any;
//  3. the imports of the package's other files.
//
// Several candidates at one step is an error that lists them.
type importResolver struct {
	ctx context.Context
	cfg Config
	// std maps a package name to the standard library's import paths of
	// that name, loaded on first use.
	std    map[string][]string
	stdErr error
	// loaded holds the packages loaded for directives, by path.
	loaded map[string]*types.Package
}

func newImportResolver(ctx context.Context, cfg Config) *importResolver {
	return &importResolver{ctx: ctx, cfg: cfg, loaded: map[string]*types.Package{}}
}

// resolve returns the package that name means in a directive of pkg, or an
// error message saying why there is none.
func (r *importResolver) resolve(pkg *types.Package, name string) (*types.Package, string) {
	direct := map[string]*types.Package{}
	for _, p := range pkg.Imports() {
		direct[p.Path()] = p
	}
	var inPkg []string
	for _, p := range pkg.Imports() {
		if p.Name() == name {
			inPkg = append(inPkg, p.Path())
		}
	}
	slices.Sort(inPkg)

	std, err := r.stdPackages()
	if err != nil {
		return nil, fmt.Sprintf("cannot list the standard library to look for package %s: %v", name, err)
	}
	var path string
	switch cands := std[name]; {
	case len(cands) == 1:
		path = cands[0]
	case len(cands) > 1:
		var imported []string
		for _, c := range cands {
			if direct[c] != nil {
				imported = append(imported, c)
			}
		}
		if len(imported) != 1 {
			return nil, fmt.Sprintf("%s is ambiguous: the standard library has %s; import the one you mean in a file of package %s", name, strings.Join(cands, ", "), pkg.Name())
		}
		path = imported[0]
	case len(inPkg) == 1:
		path = inPkg[0]
	case len(inPkg) > 1:
		return nil, fmt.Sprintf("%s is ambiguous: package %s imports %s; import the one you mean in the method's file", name, pkg.Name(), strings.Join(inPkg, ", "))
	default:
		return nil, ""
	}
	// The package's own import keeps type identity with the types of its
	// signatures; anything else is loaded from export data.
	if p := direct[path]; p != nil {
		return p, ""
	}
	p, err := r.load(path)
	if err != nil {
		return nil, fmt.Sprintf("cannot load package %s: %v", path, err)
	}
	return p, ""
}

// stdPackages lists the importable packages of the standard library by
// name.
func (r *importResolver) stdPackages() (map[string][]string, error) {
	if r.std != nil || r.stdErr != nil {
		return r.std, r.stdErr
	}
	pkgs, err := packages.Load(&packages.Config{Context: r.ctx, Mode: packages.NeedName, Dir: r.cfg.Dir, Env: r.cfg.Env}, "std")
	if err != nil {
		r.stdErr = err
		return nil, err
	}
	r.std = map[string][]string{}
	for _, p := range pkgs {
		if p.Name == "main" || slices.ContainsFunc(strings.Split(p.PkgPath, "/"), func(elem string) bool { return elem == "internal" || elem == "vendor" }) {
			continue
		}
		r.std[p.Name] = append(r.std[p.Name], p.PkgPath)
	}
	for _, paths := range r.std {
		slices.Sort(paths)
	}
	return r.std, nil
}

// load returns the types of the package at path, from export data.
func (r *importResolver) load(path string) (*types.Package, error) {
	if p, ok := r.loaded[path]; ok {
		return p, nil
	}
	pkgs, err := packages.Load(&packages.Config{
		Context:    r.ctx,
		Mode:       packages.NeedName | packages.NeedTypes,
		Dir:        r.cfg.Dir,
		Env:        r.cfg.Env,
		BuildFlags: buildFlags(r.cfg),
	}, path)
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 || pkgs[0].Types == nil {
		return nil, fmt.Errorf("no package %s", path)
	}
	if errs := pkgs[0].Errors; len(errs) > 0 {
		return nil, errs[0]
	}
	r.loaded[path] = pkgs[0].Types
	return pkgs[0].Types, nil
}

// unresolvedQualifiers returns the names used as X in X.Sel within expr
// that nothing in scope declares, each once, in order: packages the file
// does not import.
func unresolvedQualifiers(expr ast.Expr, scope *types.Scope, at token.Pos) []*ast.Ident {
	var out []*ast.Ident
	seen := map[string]bool{}
	ast.Inspect(expr, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || seen[id.Name] {
			return true
		}
		if _, obj := scope.LookupParent(id.Name, at); obj == nil {
			seen[id.Name] = true
			out = append(out, id)
		}
		return true
	})
	return out
}
