package generate

import (
	"cmp"
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Unit is one package as an analysis driver (go vet, golangci-lint) has
// type-checked it: with every file of its build, the generator's output
// and, when the driver analyzes the package with its tests, its _test.go
// files among them.
type Unit struct {
	Fset  *token.FileSet
	Files []*ast.File
	Types *types.Package
	Info  *types.Info // with Defs, Uses and Implicits for the imports
	Sizes types.Sizes
	// IgnoredFiles are the Go files of the package's directory that the
	// build leaves out, as absolute paths.
	IgnoredFiles []string
	// HasDirectives reports whether the dependency at an import path has
	// directives of its own. The limits of a method a type gets by
	// embedding are read from its package only when it does, so that
	// the common case loads nothing.
	HasDirectives func(path string) bool
}

// GenerateUnit returns what Generate returns for u's package alone: the
// files it would write and remove, or an ErrorList with the package's
// problems. It models the package as Generate loads it: its own output
// (files that start with Header) and its _test.go files left out, the rest
// type-checked again against the imports u already holds. cfg.Dir defaults
// to the package's directory, where the packages of other directives are
// loaded from.
func GenerateUnit(ctx context.Context, cfg Config, u Unit) (*Result, error) {
	output := cmp.Or(cfg.Output, DefaultOutput)
	if err := checkOutputName(output); err != nil {
		return nil, err
	}
	p := unitPackage(u)
	if p == nil {
		return &Result{}, nil
	}
	if cfg.Dir == "" {
		cfg.Dir = p.Dir
	}
	imports := newImportResolver(ctx, cfg)
	load := loadDirectives(func() *packages.Config { return packagesConfig(ctx, cfg) }, imports)
	outside := func(paths []string) ([]*pkgModel, map[string]error) {
		var with []string
		for _, path := range paths {
			if u.HasDirectives != nil && u.HasDirectives(path) {
				with = append(with, path)
			}
		}
		if len(with) == 0 {
			return nil, nil
		}
		return load(with)
	}
	models, warnings, err := analyzePackages(cfg, []*packages.Package{p}, imports, outside)
	res := &Result{Warnings: warnings}
	if err != nil {
		return res, err
	}
	files, err := runFiles(cfg, output, models)
	if err != nil {
		return res, err
	}
	res.Files = files
	return res, nil
}

// unitPackage type-checks the files of u that Generate would load, or
// returns nil if there are none (a package of tests only).
func unitPackage(u Unit) *packages.Package {
	p := &packages.Package{
		ID:           u.Types.Path(),
		Name:         u.Types.Name(),
		PkgPath:      u.Types.Path(),
		Fset:         u.Fset,
		IgnoredFiles: append([]string(nil), u.IgnoredFiles...),
		TypesSizes:   u.Sizes,
	}
	imported := map[string]*types.Package{}
	for _, f := range u.Files {
		// The name after //line directives: cgo's output names its source.
		name := u.Fset.Position(f.Package).Filename
		switch {
		case strings.HasSuffix(name, "_test.go"):
			continue
		case isGenerated(u.Fset, f):
			// Generate loads with BuildTag, which leaves these out.
			p.IgnoredFiles = append(p.IgnoredFiles, name)
			continue
		}
		p.GoFiles = append(p.GoFiles, name)
		p.Syntax = append(p.Syntax, f)
		for _, spec := range f.Imports {
			path, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				continue
			}
			if pn := u.Info.PkgNameOf(spec); pn != nil {
				imported[path] = pn.Imported()
			}
		}
	}
	if len(p.Syntax) == 0 {
		return nil
	}
	p.Dir = filepath.Dir(p.GoFiles[0])
	p.TypesInfo = &types.Info{
		Types:        map[ast.Expr]types.TypeAndValue{},
		Instances:    map[*ast.Ident]types.Instance{},
		Defs:         map[*ast.Ident]types.Object{},
		Uses:         map[*ast.Ident]types.Object{},
		Implicits:    map[ast.Node]types.Object{},
		Selections:   map[*ast.SelectorExpr]*types.Selection{},
		Scopes:       map[ast.Node]*types.Scope{},
		FileVersions: map[*ast.File]string{},
	}
	conf := types.Config{
		Importer:  importerFunc(func(path string) (*types.Package, error) { return lookupImport(imported, path) }),
		Sizes:     u.Sizes,
		GoVersion: u.Types.GoVersion(),
		Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				p.TypeErrors = append(p.TypeErrors, te)
			}
		},
	}
	// The errors are in TypeErrors, where analyzePackages reads them.
	p.Types, _ = conf.Check(u.Types.Path(), u.Fset, p.Syntax, p.TypesInfo)
	return p
}

// isGenerated reports whether f is the generator's output: its first line
// is Header.
func isGenerated(fset *token.FileSet, f *ast.File) bool {
	if len(f.Comments) == 0 || len(f.Comments[0].List) == 0 {
		return false
	}
	c := f.Comments[0].List[0]
	return c.Text == Header && fset.Position(c.Slash).Offset == 0
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// lookupImport returns the package a file of the unit imports as path.
func lookupImport(imported map[string]*types.Package, path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if p := imported[path]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("package %s is not among the imports the analysis driver resolved", path)
}
