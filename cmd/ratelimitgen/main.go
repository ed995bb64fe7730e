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
//	ratelimitgen [-output file.go] [-tags list] [-check] [-warn-near-misses] [-version] [packages]
//
// The packages default to ".". Every problem is reported as
// file.go:line:col: message, all at once, and nothing is written. With
// -check nothing is written either: the command exits with status 1 and
// names the files that are out of date.
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
	showVersion := flags.Bool("version", false, "print the version of ratelimitgen (and so of the runtime it generates code for) and exit")
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: ratelimitgen [-output file.go] [-tags list] [-check] [-warn-near-misses] [-version] [packages]\n\n")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
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

	res, err := generate.Generate(ctx, generate.Config{Dir: wd, Output: *output, Tags: strings.Split(*tags, ","), NearMissWarnings: *nearMissWarnings}, flags.Args()...)
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintln(stderr, w.Format(wd))
		}
	}
	var list generate.ErrorList
	switch {
	case errors.As(err, &list):
		fmt.Fprintln(stderr, list.Format(wd))
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "ratelimitgen: %v\n", err)
		return 1
	}

	if *check {
		stale, err := generate.Stale(res.Files)
		if err != nil {
			fmt.Fprintf(stderr, "ratelimitgen: %v\n", err)
			return 1
		}
		for _, path := range stale {
			fmt.Fprintf(stderr, "%s: out of date; run go generate (or ratelimitgen) to update it\n", generate.RelativePath(wd, path))
		}
		if len(stale) > 0 {
			return 1
		}
		return 0
	}
	if err := generate.Write(res.Files); err != nil {
		fmt.Fprintf(stderr, "ratelimitgen: %v\n", err)
		return 1
	}
	return 0
}
