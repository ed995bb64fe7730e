// Command ratelimitvet runs the ratelimitgen analyzer
// (analysis/ratelimitcheck) under go vet: it reports every error that go
// generate would report for the //ratelimit: directives of each package,
// at the directive, and a ratelimit_gen.go that is missing or out of date.
//
//	go install github.com/ratelimitgen/ratelimitgen/cmd/ratelimitvet@latest
//	go vet -vettool=$(which ratelimitvet) ./...
//
// or, as a tool of the module, on the version of the module's runtime:
//
//	go get -tool github.com/ratelimitgen/ratelimitgen/cmd/ratelimitvet
//	go vet -vettool=$(go tool -n ratelimitvet) ./...
//
// Flags: -ratelimitgen.output=file.go when go:generate runs ratelimitgen
// -output file.go, -ratelimitgen.warn-near-misses when it passes
// -warn-near-misses.
package main

import (
	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/ratelimitgen/ratelimitgen/analysis/ratelimitcheck"
)

func main() { unitchecker.Main(ratelimitcheck.Analyzer) }
