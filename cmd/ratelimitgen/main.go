// Command ratelimitgen generates rate-limiting wrappers for the methods
// that carry a //ratelimit: directive:
//
//	type Notifier interface {
//		//ratelimit:key=req.Email window=60s max=3
//		SendCode(ctx context.Context, req SendCodeRequest) error
//	}
//
// becomes, in ratelimit_gen.go beside the source, a RateLimitedNotifier
// that builds the key with plain Go and asks a runtime.Limiter before each
// call. Install it as a tool of your module, which keeps the generator and
// the runtime on one version,
//
//	go get -tool github.com/ratelimitgen/ratelimitgen/cmd/ratelimitgen
//
// and run it with
//
//	//go:generate go tool ratelimitgen
//
// Usage:
//
//	ratelimitgen [-output file.go] [-tags list] [-check] [-list [-json]] [-warn-near-misses] [-version] [packages]
//
// The packages default to ".". Every problem is reported as
// file.go:line:col: message, all at once, and nothing is written. With
// -check nothing is written either: the command exits with status 1 and
// names the files that are out of date; when they are up to date, it also
// checks that each wrapper overrides every method of its type that a
// directive limits (in any package, through any embedding) and passes
// those limits to the runtime, and reports the methods that do not.
//
// With -list nothing is written: the command checks the directives as it
// would to generate, then prints every limit they declare, and every
// limit of another package's directive that a wrapper keeps on a method it
// gets by embedding, one row per limit in the order of the directives'
// files and lines: its name (as in
// the generated runtime.Limit), window, max (the literal, or the
// expression each call computes), algorithm, burst, mode, key, cost, wait,
// refund= or settle= (SETTLED) and the directive's file:line, relative to
// the working directory; a limit of calls in flight (concurrency=) reads
// "lease 30s" as its window and "2 in flight" as its max. -json
// prints a JSON array instead, whose objects have the fields name, window,
// max (absent when each call computes it), max_expr (the max= expression,
// absent for a literal), concurrency and lease (in place of window and
// max for a limit of calls in flight), algorithm, burst, mode, key (an
// array of the key's parts), cost, wait, refund, settle, file and line;
// fields a limit does not set are absent.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/internal/generate"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments; it returns the exit status: 0 on
// success, 1 on problems in the source or stale files, 2 on bad usage.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("ratelimitgen", flag.ContinueOnError)
	flags.SetOutput(stderr)
	output := flags.String("output", generate.DefaultOutput, "name of the generated file in each package's directory")
	check := flags.Bool("check", false, "write nothing; exit with status 1 naming the generated files that are out of date")
	tags := flags.String("tags", "", "comma-separated build tags to load the packages with, as go build -tags (GOFLAGS's -tags are added)")
	nearMissWarnings := flags.Bool("warn-near-misses", false, "report comments that look like misspelt directives (// ratelimit:, //rateLimit:, /* ratelimit: */) as warnings instead of errors")
	list := flags.Bool("list", false, "write nothing; print every limit the directives declare, as an aligned table")
	asJSON := flags.Bool("json", false, "with -list, print the limits as a JSON array")
	showVersion := flags.Bool("version", false, "print the version of ratelimitgen (and so of the runtime it generates code for) and exit")
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: ratelimitgen [-output file.go] [-tags list] [-check] [-list [-json]] [-warn-near-misses] [-version] [packages]\n\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	switch {
	case *asJSON && !*list:
		fmt.Fprintln(stderr, "ratelimitgen: -json goes with -list")
		return 2
	case *list && *check:
		fmt.Fprintln(stderr, "ratelimitgen: -list and -check do not go together: -list writes nothing already")
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version(debug.ReadBuildInfo()))
		return 0
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "ratelimitgen: %v\n", err)
		return 1
	}

	cfg := generate.Config{Dir: wd, Output: *output, Tags: strings.Split(*tags, ","), NearMissWarnings: *nearMissWarnings}
	if *list {
		return printManifest(ctx, cfg, flags.Args(), *asJSON, stdout, stderr)
	}
	res, err := generate.Generate(ctx, cfg, flags.Args()...)
	if res != nil {
		report(stderr, wd, res.Warnings)
	}
	if err != nil {
		return failure(stderr, wd, err)
	}

	if *check {
		stale, err := generate.Stale(res.Files)
		if err != nil {
			return failure(stderr, wd, err)
		}
		for _, path := range stale {
			fmt.Fprintf(stderr, "%s: out of date; run go generate (or ratelimitgen) to update it\n", generate.RelativePath(wd, path))
		}
		if len(stale) > 0 {
			return 1
		}
		// Up to date is not enough if the generator itself were wrong:
		// every limited method the wrappers get must be enforced.
		if err := generate.Verify(ctx, cfg, flags.Args()...); err != nil {
			return failure(stderr, wd, err)
		}
		return 0
	}
	if err := generate.Write(res.Files); err != nil {
		return failure(stderr, wd, err)
	}
	return 0
}

// printManifest prints the limits of the packages matching patterns to
// stdout, as a table or as JSON, and returns the exit status.
func printManifest(ctx context.Context, cfg generate.Config, patterns []string, asJSON bool, stdout, stderr io.Writer) int {
	man, err := generate.List(ctx, cfg, patterns...)
	if man != nil {
		report(stderr, cfg.Dir, man.Warnings)
	}
	if err != nil {
		return failure(stderr, cfg.Dir, err)
	}
	out := man.Text(cfg.Dir)
	if asJSON {
		if out, err = man.JSON(cfg.Dir); err != nil {
			return failure(stderr, cfg.Dir, err)
		}
	}
	if _, err := stdout.Write(out); err != nil {
		return failure(stderr, cfg.Dir, err)
	}
	return 0
}

// report prints warnings, with file names relative to dir.
func report(stderr io.Writer, dir string, warnings []generate.Diagnostic) {
	for _, w := range warnings {
		fmt.Fprintln(stderr, w.Format(dir))
	}
}

// failure prints err, every problem of an ErrorList on a line of its own
// with file names relative to dir, and returns the exit status 1.
func failure(stderr io.Writer, dir string, err error) int {
	var list generate.ErrorList
	if errors.As(err, &list) {
		fmt.Fprintln(stderr, list.Format(dir))
	} else {
		fmt.Fprintf(stderr, "ratelimitgen: %v\n", err)
	}
	return 1
}
