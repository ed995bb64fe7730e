package parse

import (
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A concurrency directive, concurrency=N, limits calls in flight rather
// than a rate: runtime.Concurrency with Max N and the permit's lease as
// its Window. It takes key=, name=, mode= and wait= as a rate limit does
// (a call with wait= waits for a permit in its turn), and lease= in place
// of window=.

// Lease bounds. A permit is renewed every third of its lease, so a short
// lease costs the store a write every few hundred milliseconds per call in
// flight; a long one keeps the permits of a process that died for as long.
const (
	// DefaultLease is the lease of a concurrency directive without lease=:
	// long beside a renewal's round trip, short enough that a crashed
	// process's permits come back within half a minute.
	DefaultLease = 30 * time.Second
	// MinLease and MaxLease bound lease=.
	MinLease = time.Second
	MaxLease = time.Hour
)

// checkConcurrency checks concurrency=, the number of calls of a key that
// may be in flight at once: a count written as a literal, as max= is.
func (p *parser) checkConcurrency(v value) {
	if n, ok := p.parseCount(v, "concurrency", "concurrency=2"); ok {
		p.d.Max = n
	}
}

// checkLease checks lease=, a Go duration from MinLease to MaxLease in
// whole milliseconds.
func (p *parser) checkLease(v value) {
	d, err := time.ParseDuration(v.Value)
	switch {
	case err != nil:
		p.errorf(v.off, "lease %q is not a Go duration; write e.g. lease=30s", v.Value)
	case d < MinLease || d > MaxLease:
		p.errorf(v.off, "lease %q is out of bounds: a permit's lease is from %s (renewed every third of it) to %s (a crashed process keeps its permits that long)", v.Value, MinLease, MaxLease)
	case d%time.Millisecond != 0:
		p.errorf(v.off, "lease %q is not a whole number of milliseconds; write e.g. lease=%s", v.Value, d.Round(time.Millisecond))
	default:
		p.d.Window = d
	}
}

// concurrencyRefusals says, for each rate-limit option, why a concurrency
// directive has no use for it and what to do instead.
var concurrencyRefusals = []struct{ name, why string }{
	{"window", "a permit has a lease, not a window; write lease= (default 30s), or remove window="},
	{"max", "concurrency= is the most calls in flight; remove max=, or put a rate limit on a //ratelimit: line of its own"},
	{"algo", "concurrency= is an algorithm of its own; remove algo=, or put a rate limit on a //ratelimit: line of its own"},
	{"burst", "calls in flight have no burst; remove burst="},
	{"cost", "each call in flight holds one permit; remove cost=, or put a cost on a rate limit on a //ratelimit: line of its own"},
	{"refund", "a permit is always released when the call returns, or panics; remove refund=, or put it on a rate limit of the method"},
	{"settle", "a call in flight holds one permit whatever it did; remove settle=, or put it on a rate limit of the method"},
	{"tz", "a permit has a lease, not a calendar window; remove tz="},
}

// checkConcurrencyOptions reports, once every option of a concurrency
// directive is known, the options it cannot have, and sets what it means:
// a runtime.Concurrency limit whose Window is the lease.
func (p *parser) checkConcurrencyOptions() {
	for _, o := range p.d.Options {
		for _, r := range concurrencyRefusals {
			if o.Name == r.name {
				p.errs = append(p.errs, &Error{Pos: o.NamePos, Msg: "concurrency= cannot be combined with " + r.name + "=: " + r.why})
			}
		}
	}
	if _, set := p.d.Lookup("lease"); !set {
		p.d.Window = DefaultLease
	}
	p.d.Algorithm = runtime.Concurrency
	p.d.MaxExpr, p.d.Burst, p.d.Cost, p.d.Refund, p.d.Settle = nil, 0, nil, nil, nil
	p.d.Calendar = runtime.Calendar{}
}

// checkLeaseAlone reports lease= on a rate limit.
func (p *parser) checkLeaseAlone() {
	if o, set := p.d.Lookup("lease"); set {
		p.errs = append(p.errs, &Error{Pos: o.NamePos, Msg: "lease= applies only to concurrency=, the permit of a call in flight; a rate limit counts over window=: remove lease="})
	}
}
