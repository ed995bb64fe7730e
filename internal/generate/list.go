package generate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/manifest"
	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Entry is one limit that a directive declares, as the manifest lists it.
type Entry struct {
	// Name is the limit's name, its runtime.Limit's Name.
	Name string
	// Window is the window= duration; for a concurrency limit
	// (Algorithm runtime.Concurrency), the lease.
	Window time.Duration
	// Calendar is the calendar window of window=1d, 1w, 1mo or 1y in tz=,
	// in place of Window (then 0), or the zero value.
	Calendar runtime.Calendar
	// Max is the limit's max, known at generate time from a literal or a
	// constant expression, or 0 when each call computes it; for a
	// concurrency limit, the calls in flight. MaxExpr is the
	// max= expression as written, or "" for a literal.
	Max     int
	MaxExpr string
	// Algorithm is the limit's algorithm, the runtime's default when the
	// directive has no algo=.
	Algorithm runtime.Algorithm
	// Burst is the burst= value, or 0 when absent (max, for the
	// algorithms that have a burst).
	Burst int
	// Mode is the mode= value, runtime.ModeEnforce when absent.
	Mode runtime.Mode
	// Key holds the key's parts as written; it is empty when every caller
	// shares the limit.
	Key []string
	// Cost is the cost= expression as written, or "" for one unit a call.
	Cost string
	// Wait is the wait= duration, or 0.
	Wait time.Duration
	// Refund and Settle are the refund= and settle= expressions as
	// written, or "" without them.
	Refund, Settle string
	// Pos is the position of the directive.
	Pos token.Position
}

// Manifest is what List returns.
type Manifest struct {
	// Entries holds every limit of the run's directives, type-level ones
	// included, and every limit of another package's directive that the
	// run's wrappers enforce on a method they get by embedding, sorted by
	// the directive's file and line.
	Entries []Entry
	// Warnings are as Result's.
	Warnings []Diagnostic
}

// List loads the packages matching patterns ("." if none), checks their
// directives exactly as Generate does, and returns the limits they
// declare, generating nothing. Errors are Generate's: an ErrorList with
// every problem of the source, or another error as it is; the Manifest
// still carries the warnings.
func List(ctx context.Context, cfg Config, patterns ...string) (*Manifest, error) {
	models, warnings, err := analyze(ctx, cfg, patterns)
	man := &Manifest{Warnings: warnings}
	if err != nil {
		return man, err
	}
	listed := map[*limit]bool{}
	for _, m := range models {
		// A wrapper that keeps the limit of a method it gets by embedding
		// from a package outside the run enforces that limit too: it is
		// listed, once, at its directive.
		for _, l := range slices.Concat(m.limits, m.foreign) {
			if !listed[l] {
				listed[l] = true
				man.Entries = append(man.Entries, l.entry())
			}
		}
	}
	slices.SortFunc(man.Entries, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Pos.Filename, b.Pos.Filename), cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Name, b.Name))
	})
	return man, nil
}

// entry is l as the manifest lists it.
func (l *limit) entry() Entry {
	e := Entry{
		Name:      l.name,
		Window:    l.window,
		Calendar:  l.calendar,
		Max:       l.max,
		MaxExpr:   l.maxText,
		Algorithm: l.algorithm(),
		Burst:     l.burst,
		Mode:      l.mode,
		Wait:      l.wait,
		Pos:       l.pos,
	}
	for _, kp := range l.key {
		e.Key = append(e.Key, kp.text)
	}
	if l.cost != nil {
		e.Cost = l.cost.text
	}
	if l.refund != nil {
		e.Refund = l.refund.text
	}
	if l.settle != nil {
		e.Settle = l.settle.text
	}
	return e
}

// jsonEntry is the JSON form of an Entry: the fields of -list -json,
// which ratelimitctl reads.
type jsonEntry = manifest.Entry

// JSON renders the manifest as a JSON array with one object per limit,
// indented, with file names relative to dir where they lie below it. The
// fields are:
//
//	name         the limit's name (runtime.Limit.Name)
//	window       a Go duration, as short as it reads: "1m", "1h30m", "500ms";
//	             or for a calendar window, as written: "1d", "1w", "1mo", "1y"
//	period       for a calendar window, its period: day, week, month or
//	             year; absent for a duration window
//	zone         for a calendar window, the IANA time zone whose calendar
//	             counts, "UTC" when the directive has no tz=; absent for a
//	             duration window
//	max          the max, absent when each call computes it from max_expr
//	max_expr     the max= expression as written, absent for a literal
//	concurrency  for a limit of calls in flight, the most in flight (in
//	             place of window and max)
//	lease        for a limit of calls in flight, a permit's lease
//	algorithm    sliding-log, sliding-window, fixed-window, token-bucket,
//	             gcra, or concurrency for a limit of calls in flight
//	burst        the burst= value, absent without one
//	mode         enforce or shadow
//	key          the key's parts as written, absent without key=
//	cost         the cost= expression, absent without one
//	wait         the wait= duration, absent without one
//	refund       the refund= condition, absent without one
//	settle       the settle= expression, absent without one
//	file         the directive's file
//	line         the directive's line
func (man *Manifest) JSON(dir string) ([]byte, error) {
	out := make([]jsonEntry, len(man.Entries))
	for i, e := range man.Entries {
		out[i] = jsonEntry{
			Name:      e.Name,
			Window:    shortDuration(e.Window),
			Max:       e.Max,
			MaxExpr:   e.MaxExpr,
			Algorithm: e.Algorithm,
			Burst:     e.Burst,
			Mode:      e.Mode,
			Key:       e.Key,
			Cost:      e.Cost,
			Refund:    e.Refund,
			Settle:    e.Settle,
			File:      RelativePath(dir, e.Pos.Filename),
			Line:      e.Pos.Line,
		}
		if e.Wait > 0 {
			out[i].Wait = shortDuration(e.Wait)
		}
		if c := e.Calendar; !c.IsZero() {
			out[i].Window = parse.CalendarSpelling(c.Period)
			out[i].Period, out[i].Zone = c.Period.String(), cmp.Or(c.Zone, "UTC")
		}
		if e.Algorithm == runtime.Concurrency {
			out[i].Window, out[i].Max = "", 0
			out[i].Concurrency, out[i].Lease = e.Max, shortDuration(e.Window)
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering the manifest (a bug in ratelimitgen): %w", err)
	}
	return append(b, '\n'), nil
}

// Text renders the manifest as a table aligned with spaces, one row per
// limit under a header, with "-" for what a limit does not set and file
// names relative to dir where they lie below it. SETTLED is the refund=
// or settle= option as written. A limit of calls in flight reads "lease
// 30s" under WINDOW and "2 in flight" under MAX; a calendar window reads
// "month in Europe/Berlin" under WINDOW.
func (man *Manifest) Text(dir string) []byte {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWINDOW\tMAX\tALGORITHM\tBURST\tMODE\tKEY\tCOST\tWAIT\tSETTLED\tDIRECTIVE")
	for _, e := range man.Entries {
		max := strconv.Itoa(e.Max)
		switch {
		case e.MaxExpr != "" && e.Max > 0:
			max = e.MaxExpr + " (" + max + ")"
		case e.MaxExpr != "":
			max = e.MaxExpr
		}
		window := limitWindow(e.Window, e.Calendar)
		if e.Algorithm == runtime.Concurrency {
			window, max = "lease "+window, max+" in flight"
		}
		burst, wait := "-", "-"
		if e.Burst > 0 {
			burst = strconv.Itoa(e.Burst)
		}
		if e.Wait > 0 {
			wait = shortDuration(e.Wait)
		}
		settled := "-"
		switch {
		case e.Refund != "":
			settled = "refund=" + e.Refund
		case e.Settle != "":
			settled = "settle=" + e.Settle
		}
		pos := RelativePath(dir, e.Pos.Filename) + ":" + strconv.Itoa(e.Pos.Line)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, window, max, e.Algorithm, burst, e.Mode,
			cmp.Or(strings.Join(e.Key, ","), "-"), cmp.Or(e.Cost, "-"), wait, settled, pos)
	}
	tw.Flush()
	return buf.Bytes()
}

// shortDuration spells d as time.Duration.String does, without its zero
// minutes and seconds: "1m", "24h", "1h30m", "90s", "500ms".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
