package parse

import "time"

// checkWait checks wait=, the longest a call waits for room before it is
// denied: a positive Go duration.
func (p *parser) checkWait(v value) {
	d, err := time.ParseDuration(v.Value)
	switch {
	case err != nil:
		p.errorf(v.off, "wait %q is not a Go duration: write e.g. wait=2s or wait=500ms", v.Value)
	case d <= 0:
		p.errorf(v.off, "wait must be positive; got %q (omit wait= to deny at once)", v.Value)
	default:
		p.d.Wait = d
	}
}
