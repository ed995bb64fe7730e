package parse_test

import (
	"fmt"
	"go/token"

	"github.com/ratelimitgen/ratelimitgen/internal/parse"
)

func ExampleLine() {
	pos := token.Position{Filename: "notifier.go", Line: 9, Column: 2}
	d, errs := parse.Line(`//ratelimit:key=req.Tenant, strings.ToLower(req.Email) window=60s max=3`, pos)
	fmt.Println(len(errs), d.Window, d.Max)
	for _, k := range d.Key {
		fmt.Println(k.Pos, k.Text)
	}

	_, errs = parse.Line(`//ratelimit:key=req.Email windw=60s max=0`, pos)
	for _, e := range errs {
		fmt.Println(e)
	}
	// Output:
	// 0 1m0s 3
	// notifier.go:9:18 req.Tenant
	// notifier.go:9:30 strings.ToLower(req.Email)
	// notifier.go:9:28: unknown option "windw"; did you mean "window"?
	// notifier.go:9:42: max must be at least 1; got 0
}

func ExampleNearMiss() {
	pos := token.Position{Filename: "notifier.go", Line: 9, Column: 2}
	fmt.Println(parse.NearMiss("// rateLimit:key=req.Email window=60s max=3", pos))
	fmt.Println(parse.NearMiss("// RateLimit returns the configured limit.", pos))
	// Output:
	// notifier.go:9:2: comment looks like a //ratelimit: directive but is ignored: there is a space after "//" (gofmt inserts one in doc comments when the rest is not an exact directive); it is spelt rateLimit rather than ratelimit; write //ratelimit:key=req.Email window=60s max=3
	// <nil>
}
