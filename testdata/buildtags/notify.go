// Package buildtags declares rate-limited types under build constraints:
// their wrappers are generated under the same constraints, so the package
// builds on every platform (the golden test vets it with GOOS=windows and
// GOOS=linux).
package buildtags

import "context"

// Notifier is declared everywhere.
type Notifier interface {
	//ratelimit:key=to window=1m max=3
	Send(ctx context.Context, to string) error
}

// Disk is declared everywhere, but its limited method only on Linux.
type Disk struct{}
