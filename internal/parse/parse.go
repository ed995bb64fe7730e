package parse

import (
	"fmt"
	"go/token"
	"strings"
)

// emptyHint is the example offered for an empty directive.
const emptyHint = "write e.g. " + Prefix + "key=req.Email window=60s max=3"

// maxLen bounds the length of a directive. Real ones are well under 200
// bytes; the bound keeps the parser's worst case (quadratic, on adversarial
// input with many unclosed brackets) far from anything noticeable.
const maxLen = 4096

// Line parses one comment's text (exactly as ast.Comment.Text, starting with
// "//") whose first byte is at pos.
//
// If text does not start with Prefix, Line returns (nil, nil). Otherwise it
// returns the directive and every problem found, or nil errors when there is
// none. The directive is returned even alongside errors, holding what was
// valid, so that a caller can go on checking the rest; it must not generate
// code from a directive that came with errors.
//
// Options are name=value pairs separated by whitespace, in any order; see
// the package tests for the full grammar. Every error's position is that of
// a byte of text; pos fields that are not set (Line or Column 0) are taken as
// 1. A directive longer than 4096 bytes is reported and not parsed.
func Line(text string, pos token.Position) (*Directive, []*Error) {
	if !strings.HasPrefix(text, Prefix) {
		return nil, nil
	}
	p := &parser{
		text:  text,
		loc:   newLocator(text, pos),
		first: map[string]token.Position{},
		seen:  map[string]bool{},
	}
	p.d = &Directive{Pos: p.loc.at(0)}
	if strings.TrimRight(text[len(Prefix):], " \t") == Exempt {
		p.d.Exempt = true
		return p.d, nil
	}
	p.parse()
	return p.d, p.errs
}

// parser holds the state of one Line call.
type parser struct {
	text string
	loc  locator
	d    *Directive
	errs []*Error

	// first holds the name position of each supported option's first use,
	// for duplicate reports.
	first map[string]token.Position
	// seen holds the supported options the author tried to write, even
	// misspelt or without a value, so that "missing" is not reported twice.
	seen map[string]bool
}

// value is one name=value option as found in the text.
type value struct {
	Option
	off int // offset of the value's first non-space byte
	// lexOK is false when the value had an unclosed bracket or literal,
	// already reported.
	lexOK bool
}

func (p *parser) errorf(off int, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: p.loc.at(off), Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) parse() {
	s := p.text
	i := len(Prefix)
	if len(s) > maxLen {
		p.errorf(0, "directive is %d bytes long; the limit is %d", len(s), maxLen)
		return
	}
	if strings.TrimSpace(s[i:]) == "" {
		p.errorf(0, "empty directive; %s", emptyHint)
		return
	}
	if isSpace(s[i]) {
		p.errorf(i-1, "remove the space after %q: in doc comments gofmt keeps a line as a directive only when a lower-case letter follows the colon, and rewrites the rest as prose", Prefix)
	}
	afterKey := false // the previous option was key=
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		if isCommentStart(s, i) {
			p.errorf(i, "a directive cannot be followed by a comment on the same line; move %q to a line of its own", strings.TrimSpace(s[i:]))
			return // what follows is the comment's: options there are not missing
		}
		if isMisusedSeparator(s, i) {
			p.errorf(i, "separate options with spaces, not %q", s[i:i+1])
			i++
			continue
		}
		if nameEnd, eq, ok := optionName(s, i); ok {
			afterKey = s[i:nameEnd] == "key"
			i = p.option(i, nameEnd, eq)
			continue
		}
		i = p.stray(i, afterKey)
		afterKey = false
	}
	if p.seen["concurrency"] {
		p.checkConcurrencyOptions()
		return
	}
	p.checkLeaseAlone()
	p.checkMissing()
	p.checkCalendar()
	p.checkBurstAlgo()
}

// option handles the name=value option whose name spans s[start:nameEnd]
// and whose "=" is at eq. It returns where the next option may start.
func (p *parser) option(start, nameEnd, eq int) (next int) {
	s := p.text
	name := s[start:nameEnd]
	spec, known := lookupOption(name)
	mode := flat
	if known {
		mode = spec.mode
	}
	sc := scanValue(s, eq+1, mode)
	lexOK := true
	if sc.open >= 0 {
		p.reportOpen(sc.open, name)
		sc = scanValue(s, eq+1, flat)
		lexOK = false
	}
	off := eq + 1
	for off < sc.end && isSpace(s[off]) {
		off++
	}
	if spaced := eq > nameEnd || off > eq+1; spaced && off < sc.end {
		p.errorf(eq, "remove the spaces around \"=\": write %s=%s", name, s[off:sc.end])
	} else if spaced {
		p.errorf(eq, "remove the spaces around \"=\"")
	}
	v := value{
		Option: Option{
			Name:     name,
			Value:    s[off:sc.end],
			NamePos:  p.loc.at(start),
			ValuePos: p.loc.raw(off),
		},
		off:   off,
		lexOK: lexOK,
	}
	p.d.Options = append(p.d.Options, v.Option)

	switch {
	case known:
		p.seen[name] = true
		if first, dup := p.first[name]; dup {
			p.errorf(start, "duplicate option %q; it is already set at %s: remove one", name, first)
			break
		}
		p.first[name] = v.NamePos
		if v.Value == "" {
			p.errorf(start, "option %q has an empty value; write e.g. %s", name, spec.example)
			break
		}
		spec.check(p, v)
	default:
		p.unknown(start, name)
	}
	return sc.next
}

// stray handles text at offset i that is not a name=value option, and
// returns where the next option may start. afterKey says whether it follows
// key=: a bare word there may be a missing comma.
func (p *parser) stray(i int, afterKey bool) int {
	s := p.text
	sc := scanValue(s, i, flat)
	word := s[i:sc.end]
	nameEnd := nameAt(s, i)
	name := s[i:nameEnd]
	switch {
	case nameEnd == sc.end && isOptionName(name):
		p.markSeen(name)
		hint := ""
		if afterKey {
			hint = "; if it is part of the key, separate key parts with commas"
		}
		p.errorf(i, "option %q has no value; write %s%s", name, example(name), hint)
	case nameEnd > i && nameEnd < len(s) && s[nameEnd] == ':':
		p.markSeen(name)
		p.errorf(i, "options are written name=value, with \"=\" rather than \":\"; found %q", word)
	default:
		p.errorf(i, "expected an option name=value, found %q", word)
	}
	return sc.next
}

// unknown reports the unsupported option called name at offset off.
func (p *parser) unknown(off int, name string) {
	if s, ok := suggest(name); ok {
		p.markSeen(s)
		p.errorf(off, "unknown option %q; did you mean %q?", name, s)
		return
	}
	p.errorf(off, "unknown option %q; the options are %s", name, strings.Join(Options, ", "))
}

func (p *parser) markSeen(name string) {
	if _, ok := lookupOption(name); ok {
		p.seen[name] = true
	}
}

// reportOpen reports the bracket or literal at offset off left open in the
// value of option name.
func (p *parser) reportOpen(off int, name string) {
	c := p.text[off]
	switch c {
	case '"', '\'', '`':
		p.errorf(off, "%s literal in %s= is not terminated; close it with %c", literalKind(c), name, c)
	default:
		p.errorf(off, "%q in %s= is not closed; close it with %q", string(c), name, string(closerOf(c)))
	}
}

func literalKind(quote byte) string {
	switch quote {
	case '\'':
		return "rune"
	case '`':
		return "raw string"
	}
	return "string"
}

// checkMissing reports required options the directive lacks.
func (p *parser) checkMissing() {
	for _, o := range optionTable {
		if o.required && !p.seen[o.name] {
			p.errorf(0, "directive has no %s; add e.g. %s", o.name, o.example)
		}
	}
}
