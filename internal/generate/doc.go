// Package generate implements ratelimitgen: it finds //ratelimit:
// directives on the methods of Go packages, checks them against the
// methods' real types, and returns the source of the wrapper types that
// enforce them. It returns bytes; writing them is the caller's business
// (see Write and Stale).
//
// A run loads the packages once, under the build tag ratelimitgen that
// excludes earlier output, then for each package:
//
//   - scans every comment for directives (internal/parse) and for
//     near-misses, which are warnings;
//   - type-checks each key and cost expression in the scope of its
//     method's parameters, nested in the scope of the file that declares
//     it, and checks what the options decide together (a constant cost
//     within the limit's capacity, distinct names for the limits of one
//     method, limits the runtime accepts);
//   - collects every problem with its position, so that one run reports
//     all of them and writes nothing;
//   - emits one file with jennifer, where a single naming registry
//     chooses every identifier the generator introduces. A method with one
//     limit calls Limiter.Allow (runtime.AllowN with a cost); a method with
//     several calls runtime.AllowAll once, so that a call is counted by
//     every limit or by none. A cost computed at run time is checked with
//     runtime.CheckCost first, so that a cost of 0 is an error naming 0
//     rather than a Request's default cost of 1.
package generate
