// Package nearmiss has comments that look like directives but are not:
// they are warnings, and the one real directive is generated.
package nearmiss

// Jobs runs jobs.
type Jobs interface {
	// ratelimit:key=id window=1s max=1
	Run(id string) error

	//rateLimit:key=id window=1s max=1
	Stop(id string) error

	//ratelimit:key=id window=1s max=1
	Start(id string) error
}
