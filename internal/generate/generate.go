package generate

import (
	"cmp"
	"context"
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// DefaultOutput is the name of the generated file in each package's
// directory.
const DefaultOutput = "ratelimit_gen.go"

// Config configures a run.
type Config struct {
	// Dir is the directory in which package patterns are resolved; the
	// current directory if empty.
	Dir string
	// Env is the environment of the go command; the process's if nil.
	Env []string
	// Output is the name of the generated file, in each package's
	// directory; DefaultOutput if empty.
	Output string
	// Tags are build tags to load the packages with, as go build -tags
	// takes them; those of GOFLAGS's -tags are added.
	Tags []string
	// NearMissWarnings reports comments that look like misspelt
	// directives (// ratelimit:, //rateLimit:, /* ratelimit: */) as
	// warnings. By default they are errors: such a comment leaves its
	// method unlimited without a word.
	NearMissWarnings bool
}

// File is the output of one package.
type File struct {
	// Path is the file's absolute path.
	Path string
	// Content is the generated source. It is nil when the package has no
	// directives left but holds a file generated earlier, which is then
	// stale and must be removed.
	Content []byte
}

// Result is the output of a run.
type Result struct {
	// Files holds one file per package that has directives, and one with
	// nil Content per package whose earlier output must be removed, sorted
	// by path.
	Files []File
	// Warnings are directives that work but are likely costly and, with
	// Config.NearMissWarnings, comments that look like misspelt
	// directives, sorted by position. They do not stop generation.
	Warnings []Diagnostic
}

// Generate loads the packages matching patterns ("." if none) and returns
// their generated files. When the source has problems it returns an
// ErrorList with all of them and no files; the Result still carries the
// warnings. Other errors (the go command failing, say) are returned as is.
func Generate(ctx context.Context, cfg Config, patterns ...string) (*Result, error) {
	output := cmp.Or(cfg.Output, DefaultOutput)
	if err := checkOutputName(output); err != nil {
		return nil, err
	}
	models, warnings, err := analyze(ctx, cfg, patterns)
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

// runFiles returns the files a run writes for models, and the removals of
// earlier output, sorted by path; or an ErrorList and no files.
func runFiles(cfg Config, output string, models []*pkgModel) ([]File, error) {
	var (
		files []File
		errs  ErrorList
	)
	matcher := newFileMatcher(cfg)
	for _, m := range models {
		fs, err := outputFiles(m, output)
		if err != nil {
			if el, ok := err.(ErrorList); ok {
				errs = append(errs, el...)
				continue
			}
			return nil, err
		}
		files = append(files, fs...)
		// Output written earlier under another -output name, or for a
		// constraint that no wrapper has any more, would redeclare
		// wrappers.
		earlier, err := earlierOutputs(m, fs, matcher)
		if err != nil {
			return nil, err
		}
		files = append(files, earlier...)
	}
	if len(errs) > 0 {
		return nil, sortDiagnostics(errs)
	}
	slices.SortFunc(files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	return files, nil
}

// analyze loads the packages matching patterns ("." if none) and builds
// their models: their limits, checked, and their wrappers. It returns the
// warnings of the run, and an ErrorList with every problem of the source,
// if there are any; other errors (the go command failing, say) as they
// are. Patterns naming directories of another module than cfg.Dir's (one
// nested in it, say) are analyzed in runs of their own (see byModule).
func analyze(ctx context.Context, cfg Config, patterns []string) ([]*pkgModel, []Diagnostic, error) {
	runs := byModule(cfg.Dir, patterns)
	if len(runs) == 1 && runs[0].dir == cfg.Dir {
		return analyzeModule(ctx, cfg, patterns)
	}
	var (
		models   []*pkgModel
		warnings []Diagnostic
		errs     ErrorList
	)
	for _, r := range runs {
		rcfg := cfg
		rcfg.Dir = r.dir
		ms, ws, err := analyzeModule(ctx, rcfg, r.patterns)
		warnings = append(warnings, ws...)
		if el, ok := err.(ErrorList); ok {
			errs = append(errs, el...)
		} else if err != nil {
			return nil, sortDiagnostics(warnings), err
		}
		models = append(models, ms...)
	}
	if len(errs) > 0 {
		return models, sortDiagnostics(warnings), sortDiagnostics(errs)
	}
	return models, sortDiagnostics(warnings), nil
}

// analyzeModule is analyze for patterns of cfg.Dir's module.
func analyzeModule(ctx context.Context, cfg Config, patterns []string) ([]*pkgModel, []Diagnostic, error) {
	pkgs, err := load(ctx, cfg, patterns)
	if err != nil {
		return nil, nil, err
	}
	imports := newImportResolver(ctx, cfg)
	outside := loadDirectives(func() *packages.Config { return packagesConfig(ctx, cfg) }, imports)
	return analyzePackages(cfg, pkgs, imports, outside)
}

// analyzePackages builds the models of pkgs, type-checked under the
// generator's build tag, as analyze does; outside reads the directives of
// packages that the run does not hold (see limitIndex).
func analyzePackages(cfg Config, pkgs []*packages.Package, imports *importResolver, outside func([]string) ([]*pkgModel, map[string]error)) ([]*pkgModel, []Diagnostic, error) {
	slices.SortFunc(pkgs, func(a, b *packages.Package) int { return cmp.Compare(a.PkgPath, b.PkgPath) })

	ds := &diagnostics{nearMissWarnings: cfg.NearMissWarnings}
	var models []*pkgModel
	generated := map[string]bool{} // "Name" and "pkgname.Name" of every generated declaration
	for _, pkg := range pkgs {
		for _, e := range pkg.Errors {
			// Compiler output ("# path\n...") comes from building export
			// data; the type checker reports the same problems with
			// positions, below, where they matter.
			if e.Kind != packages.TypeError && !strings.HasPrefix(e.Msg, "# ") {
				pos := parsePosition(e.Pos)
				if pos.Filename != "" && !filepath.IsAbs(pos.Filename) {
					// The go command names files relative to where it ran.
					pos.Filename = filepath.Join(cfg.Dir, pos.Filename)
				}
				ds.errorf(pos, "%s", e.Msg)
			}
		}
		if pkg.Types == nil || pkg.TypesInfo == nil {
			continue
		}
		m := buildModel(pkg, imports, ds)
		checkExcludedFiles(m, ds)
		models = append(models, m)
	}
	index := newLimitIndex(models, outside)
	for _, m := range models {
		buildWrappers(m, index, ds)
		for _, name := range m.generatedNames() {
			generated[name] = true
			generated[m.pkg.Name+"."+name] = true
		}
	}
	checkSharedNames(models, ds)
	// Type errors matter only in packages that use directives: others are
	// loaded because a pattern matched them. Code that calls the wrappers
	// of this run is expected not to compile until they are generated.
	for _, m := range models {
		if m.directives == 0 && len(m.wrappers) == 0 {
			continue
		}
		blocking := 0
		var first token.Position
		for _, e := range m.pkg.TypeErrors {
			if name, ok := strings.CutPrefix(e.Msg, "undefined: "); ok && generated[name] {
				continue
			}
			pos := e.Fset.Position(e.Pos)
			ds.errorf(pos, "%s", e.Msg)
			if blocking == 0 {
				first = token.Position{Filename: pos.Filename}
			}
			blocking++
		}
		if blocking > 0 {
			// Compiler errors alone read as if the generator broke.
			ds.errorf(first, "package %s does not compile (%d error(s) listed here): ratelimitgen checks directives against the package's types and generates nothing until it compiles", m.pkg.PkgPath, blocking)
		}
	}

	errs, warnings := ds.split()
	if len(errs) > 0 {
		return models, warnings, errs
	}
	return models, warnings, nil
}

// checkOutputName rejects output names that would not make a plain Go
// source file beside the package's sources.
func checkOutputName(name string) error {
	switch {
	case strings.ContainsRune(name, '/') || strings.ContainsRune(name, filepath.Separator):
		return fmt.Errorf("-output %q must be a file name, not a path: the file is written in each package's directory", name)
	case !strings.HasSuffix(name, ".go"):
		return fmt.Errorf("-output %q must end in .go", name)
	case strings.HasSuffix(name, "_test.go"):
		return fmt.Errorf("-output %q must not end in _test.go: the wrappers would exist only in tests", name)
	}
	return nil
}

// packageDir returns the directory of m's package, or "" if it has none.
func packageDir(m *pkgModel) string {
	if m.pkg.Dir == "" && len(m.pkg.GoFiles) > 0 {
		return filepath.Dir(m.pkg.GoFiles[0])
	}
	return m.pkg.Dir
}

// outputFiles returns the files of m: its generated code, one file per
// build constraint of its wrappers (see constraints.go), or a removal if m
// has no wrappers but an earlier run left a file.
func outputFiles(m *pkgModel, output string) ([]File, error) {
	dir := packageDir(m)
	if dir == "" {
		return nil, nil
	}
	base := filepath.Join(dir, output)
	if len(m.wrappers) == 0 {
		return nil, nil // an earlier run's files are removed by earlierOutputs
	}
	groups, srcs, err := emitPackage(m)
	if err != nil {
		return nil, err
	}
	var files []File
	var errs ErrorList
	for i, g := range groups {
		path := base
		if g.constraint != nil {
			path = filepath.Join(dir, constrainedName(output, g.constraint))
		}
		if err := checkOverwrite(path); err != nil {
			errs = append(errs, err...)
			continue
		}
		files = append(files, File{Path: path, Content: srcs[i]})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return files, nil
}

// checkOverwrite refuses to overwrite a file at path that the generator
// did not write.
func checkOverwrite(path string) ErrorList {
	ours, err := startsWithHeader(path)
	switch {
	case os.IsNotExist(err) || ours:
		return nil
	case err != nil:
		return ErrorList{{Pos: positionOf(path), Msg: err.Error()}}
	}
	name := filepath.Base(path)
	return ErrorList{{Pos: positionOf(path), Msg: fmt.Sprintf("%s exists and was not generated by ratelimitgen (it does not start with %q); refusing to overwrite it: rename it or choose another -output", name, Header)}}
}
