// Package unexported has an unexported interface: its wrapper and
// constructor are unexported too.
package unexported

type store interface {
	//ratelimit:key=id window=1s max=1
	get(id string) ([]byte, error)
}
