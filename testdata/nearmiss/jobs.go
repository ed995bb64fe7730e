// Package nearmiss has comments that look like directives but are not:
// each is an error that says how to write the directive.
package nearmiss

// Jobs runs jobs.
type Jobs interface {
	// ratelimit:key=id window=1s max=1
	Run(id string) error

	//rateLimit:key=id window=1s max=1
	Stop(id string) error

	//rate-limit:key=id window=1s max=1
	Pause(id string) error

	/* ratelimit:key=id window=1s max=1 */
	Resume(id string) error

	//ratelimit:key=id window=1s max=1
	Start(id string) error
}
