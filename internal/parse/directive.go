// Package parse turns the text of a //ratelimit: comment into a Directive.
// It knows nothing of go/types: key and cost expressions are kept as text
// with their positions, for the generator to type-check in the method's
// scope, and so is max= when it is not an integer literal. Every error
// carries the position of the offending byte.
package parse

import (
	"go/token"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Prefix starts every directive. There is no space after the slashes, as in
// //go:generate, so that gofmt leaves it alone and godoc hides it.
const Prefix = "//ratelimit:"

// Exempt is the directive, //ratelimit:exempt, by which a method opts out
// of the limits of its type's type-level directives.
const Exempt = "exempt"

// Directive is one parsed //ratelimit: comment line.
type Directive struct {
	// Pos is the position of the comment's first slash.
	Pos token.Position

	// Exempt is set for //ratelimit:exempt, which has no options.
	Exempt bool

	// Key holds the key expressions, one per comma-separated part, in order.
	// It is nil when the directive has no key= option (one limit shared by
	// every caller).
	Key []Expr
	// Window is the window= duration, > 0, or 0 for a calendar window
	// (Calendar); for a concurrency directive, the permit's lease (lease=,
	// or DefaultLease).
	Window time.Duration
	// Calendar is the calendar window of window=1d, 1w, 1mo or 1y, in the
	// time zone of tz= ("" for UTC when tz= is absent), or the zero value
	// for a duration window. With a Calendar, Algorithm is
	// runtime.FixedWindow.
	Calendar runtime.Calendar
	// Max is the max= count, >= 1, when max= is an integer literal, or 0
	// when it is an expression (MaxExpr); for a concurrency directive, the
	// concurrency= count.
	Max int
	// MaxExpr is the max= expression, evaluated on every call, or nil when
	// max= is an integer literal (Max).
	MaxExpr *Expr
	// Algorithm is the algo= value, one of runtime.Algorithms(), or ""
	// when absent (the runtime's default); runtime.Concurrency for a
	// concurrency directive.
	Algorithm runtime.Algorithm
	// Burst is the burst= value, >= 1, or 0 when absent. It is only ever
	// set with algo=token-bucket or algo=gcra.
	Burst int
	// Cost is the cost= expression, the units one call uses, or nil when
	// absent (one unit per call).
	Cost *Expr
	// Name is the name= override, or "" for the default Type.Method.
	Name string
	// Wait is the wait= duration, > 0, or 0 when absent: how long a call
	// may wait for room, or for a concurrency directive's permit, instead
	// of being denied.
	Wait time.Duration
	// Mode is the mode= value: runtime.ModeEnforce (also when absent) or
	// runtime.ModeShadow. runtime.ModeOff is refused: a disabled limit is
	// a run-time override, not a directive.
	Mode runtime.Mode
	// Refund is the refund= condition over the method's results, or nil
	// when absent: an admitted call for which it holds gives its units
	// back once it returns.
	Refund *Expr
	// Settle is the settle= integer over the method's results, or nil
	// when absent: the units an admitted call counts once it returns, in
	// place of its cost.
	Settle *Expr

	// Options holds every option as written, in source order, including the
	// ones above; the generator uses their positions in its own errors.
	Options []Option
}

// Option is one name=value pair as written.
type Option struct {
	Name     string
	Value    string
	NamePos  token.Position // position of the option name's first byte
	ValuePos token.Position // position of the value's first byte
}

// Expr is a Go expression kept as source text.
type Expr struct {
	Text string
	Pos  token.Position // position of the expression's first byte
}

// Lookup returns the option named name, if present.
func (d *Directive) Lookup(name string) (Option, bool) {
	for _, o := range d.Options {
		if o.Name == name {
			return o, true
		}
	}
	return Option{}, false
}

// Error is a problem found at a position. Its message says what to change.
type Error struct {
	Pos token.Position
	Msg string
}

// Error formats the error as "file.go:line:col: message".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }
