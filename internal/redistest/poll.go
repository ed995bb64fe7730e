package redistest

import (
	"errors"
	"time"
)

// pollInterval is how often readiness conditions are rechecked: short enough
// that tests rarely wait for nothing, long enough not to busy-spin six servers.
const pollInterval = 20 * time.Millisecond

// permanentError marks a poll check failure that waiting cannot fix, such as
// a process that has exited.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// permanent wraps err so that poll gives up at once.
func permanent(err error) error { return permanentError{err: err} }

// poll calls check until it returns nil, returns a permanent error, or timeout
// elapses; it then returns check's last error. The timeout is only an upper
// bound for giving up on a broken setup, never an expectation of speed.
func poll(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		var p permanentError
		if errors.As(err, &p) {
			return p.err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollInterval)
	}
}
