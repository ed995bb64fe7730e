package generate

import (
	"cmp"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Diagnostic is a problem found at a position of the user's source: an
// error that stops generation, or a warning (a comment that looks like a
// misspelt directive, a sliding log too large for Redis's compact
// encoding) that does not.
type Diagnostic struct {
	Pos     token.Position
	Msg     string
	Warning bool
}

// Format renders d as "file.go:line:col: message" (with "warning: " before
// the message of a warning), with the file name relative to dir when it
// lies below dir.
func (d Diagnostic) Format(dir string) string {
	pos := d.Pos
	pos.Filename = RelativePath(dir, pos.Filename)
	s := pos.String()
	if s == "-" {
		s = "ratelimitgen"
	}
	msg := d.Msg
	if dir != "" {
		// Positions quoted in messages ("already set at file.go:3:4")
		// are shortened the same way.
		msg = strings.ReplaceAll(msg, filepath.Clean(dir)+string(filepath.Separator), "")
	}
	if d.Warning {
		return s + ": warning: " + msg
	}
	return s + ": " + msg
}

// RelativePath returns name relative to dir if it lies within dir, and
// name otherwise.
func RelativePath(dir, name string) string {
	if dir == "" || name == "" || !filepath.IsAbs(name) {
		return name
	}
	rel, err := filepath.Rel(dir, name)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return name
	}
	return rel
}

// ErrorList is the error Generate returns when the source has problems: all
// of them, sorted by position, so that one run reports everything to fix.
type ErrorList []Diagnostic

// Error joins the diagnostics one per line, with absolute file names; use
// Format for names relative to a directory.
func (l ErrorList) Error() string {
	return l.Format("")
}

// Format renders the list one diagnostic per line, with file names
// relative to dir where possible.
func (l ErrorList) Format(dir string) string {
	var b strings.Builder
	for i, d := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.Format(dir))
	}
	return b.String()
}

// diagnostics collects the problems of one run.
type diagnostics struct {
	list []Diagnostic
	// nearMissWarnings makes near-misses warnings (Config.NearMissWarnings).
	nearMissWarnings bool
}

// nearMiss reports a comment that looks like a misspelt directive: an
// error unless the run asked for warnings, since a directive that silently
// does nothing leaves a method unlimited.
func (ds *diagnostics) nearMiss(pos token.Position, msg string) {
	if ds.nearMissWarnings {
		ds.warnf(pos, "%s", msg)
		return
	}
	ds.errorf(pos, "%s (run ratelimitgen with -warn-near-misses to make this a warning)", msg)
}

func (ds *diagnostics) errorf(pos token.Position, format string, args ...any) {
	ds.list = append(ds.list, Diagnostic{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (ds *diagnostics) warnf(pos token.Position, format string, args ...any) {
	ds.list = append(ds.list, Diagnostic{Pos: pos, Msg: fmt.Sprintf(format, args...), Warning: true})
}

// split returns the errors and the warnings, each sorted by position and
// without duplicates (a key checked for two wrappers is reported once).
func (ds *diagnostics) split() (errs ErrorList, warnings []Diagnostic) {
	for _, d := range ds.list {
		if d.Warning {
			warnings = append(warnings, d)
		} else {
			errs = append(errs, d)
		}
	}
	return sortDiagnostics(errs), sortDiagnostics(warnings)
}

func sortDiagnostics[L ~[]Diagnostic](l L) L {
	slices.SortFunc(l, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Filename, b.Pos.Filename),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.Compact(l)
}

// parsePosition turns the "file:line:col" (or "file:line", or "file") of a
// go list or parser error into a Position.
func parsePosition(s string) token.Position {
	var pos token.Position
	rest := s
	var nums []int
	for range 2 {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			break
		}
		nums = append([]int{n}, nums...)
		rest = rest[:i]
	}
	pos.Filename = rest
	if len(nums) > 0 {
		pos.Line = nums[0]
	}
	if len(nums) > 1 {
		pos.Column = nums[1]
	}
	return pos
}
