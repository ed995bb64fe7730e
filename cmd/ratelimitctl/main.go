// Command ratelimitctl shows and resets, for the people on call, the state
// that a service's runtime/redislimit limiter keeps in Redis for one key
// of one limit, and lists the limits the service declares:
//
//	ratelimitctl list  -manifest limits.json
//	ratelimitctl show  -manifest limits.json -limit Notifier.SendCode -key alice@example.com -redis redis://host:6379/0
//	ratelimitctl reset -manifest limits.json -limit Notifier.SendCode -key alice@example.com -redis redis://host:6379/0
//
// The limits come from the manifest that `ratelimitgen -list -json` prints
// and from the service's overrides file (-overrides), so the operator names
// a limit and a key, not an algorithm and a window. Install it with
//
//	go install github.com/ratelimitgen/ratelimitgen/cmd/ratelimitctl@latest
//
// docs/operators.md describes it, and how to go from a 429 to the limit
// and key to look at.
package main

import (
	"os"

	"github.com/ratelimitgen/ratelimitgen/internal/ctl"
)

func main() {
	os.Exit(ctl.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
