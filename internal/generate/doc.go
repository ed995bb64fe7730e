// Package generate implements ratelimitgen: it finds //ratelimit:
// directives on the methods of Go packages, checks them against the
// methods' real types, and returns the source of the wrapper types that
// enforce them. It returns bytes; writing them is the caller's business
// (see Write and Stale). List runs the same checks and returns the limits
// the directives declare as data, a Manifest, which renders itself as a
// table or as JSON. GenerateUnit runs the same on one package that an
// analysis driver has type-checked already (analysis/ratelimitcheck, for
// go vet and golangci-lint).
//
// A run loads the packages once, under the build tag ratelimitgen that
// excludes earlier output, then for each package:
//
//   - scans every comment for directives (internal/parse) and for
//     near-misses, which are warnings;
//   - type-checks each key, cost and max expression in the scope of its
//     method's parameters, nested in the scope of the file that declares
//     it, and checks what the options decide together (a constant cost
//     within the limit's capacity, distinct names for the limits of one
//     method, limits the runtime accepts);
//   - collects every problem with its position, so that one run reports
//     all of them and writes nothing;
//   - emits one file with jennifer (one per build constraint), where a
//     naming registry chooses every identifier the generator introduces:
//     package-level names once for the package, locals per method. A
//     rate-limited method makes one runtime.Enforce call (runtime.Wait
//     with wait=) with a runtime.Request per limit, so that a call is
//     counted by every limit or by none; a limit whose computed cost is 0
//     is left out of it, as the runtime reads a Cost of 0 as 1. A method
//     settled once it returns (refund=, settle=, concurrency=) makes one
//     runtime.Admit call in its place (runtime.AdmitWait with wait=,
//     which also waits for a concurrency limit's permit in its turn) and
//     settles the Hold it returns. Nothing but the wrappers and their
//     limits is emitted into the package.
package generate
