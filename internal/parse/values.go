package parse

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// checkWindow checks window=, a calendar window (see checkCalendarWindow)
// or a Go duration (time.ParseDuration) of at least 1µs and a whole number
// of microseconds: limiters measure time in microseconds, so anything
// finer would be silently rounded.
func (p *parser) checkWindow(v value) {
	if p.checkCalendarWindow(v) {
		return
	}
	d, err := time.ParseDuration(v.Value)
	switch {
	case err != nil:
		p.errorf(v.off, "%s", windowSyntax(v.Value))
	case d <= 0:
		p.errorf(v.off, "window must be positive; got %q", v.Value)
	case d < time.Microsecond:
		p.errorf(v.off, "window %q is shorter than 1µs, the limiter's resolution", v.Value)
	case d%time.Microsecond != 0:
		p.errorf(v.off, "window %q is not a whole number of microseconds, the limiter's resolution", v.Value)
	default:
		p.d.Window = d
	}
}

// windowSyntax explains why s is not a Go duration, with the likely fix.
func windowSyntax(s string) string {
	if _, err := strconv.ParseFloat(s, 64); err == nil && isDecimal(s) {
		return "window " + strconv.Quote(s) + " is not a Go duration; write it with a unit, e.g. window=" + s + "s"
	}
	if msg := calendarSyntax(s); msg != "" {
		return msg
	}
	if lower := strings.ToLower(s); lower != s {
		if _, err := time.ParseDuration(lower); err == nil {
			return "window " + strconv.Quote(s) + " is not a Go duration, whose units are lower case; write window=" + lower
		}
	}
	return "window " + strconv.Quote(s) + " is not a Go duration; write e.g. window=60s, window=5m or window=1h30m, or a calendar window: window=1d, 1w, 1mo or 1y"
}

// isDecimal reports whether s is digits with at most one ".", such as "60"
// or "1.5".
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case '0' <= s[i] && s[i] <= '9':
			digits++
		case s[i] == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// maxCount is the largest max= or burst=: generated code holds them in an
// int, which has 32 bits on some platforms.
const maxCount = math.MaxInt32

// checkMax checks max=: a count (see parseCount) when it is written as a
// literal, else one Go expression, such as planLimit(ctx), req.Plan.Max or
// 2*defaultMax, whose type and value the generator checks.
func (p *parser) checkMax(v value) {
	if isLiteral(v.Value) {
		if n, ok := p.parseCount(v, "max", "max=10"); ok {
			p.d.Max = n
		}
		return
	}
	p.d.MaxExpr = p.integerExpr(v, "max")
}

// isLiteral reports whether s is written as a literal, signed or not
// (3, -2, 10.5, "10"), or fails to parse but starts like a number: the
// count's own messages explain what is wrong with it.
func isLiteral(s string) bool {
	x, err := goparser.ParseExpr(s)
	if err != nil {
		s = strings.TrimLeft(s, "+-")
		return s != "" && '0' <= s[0] && s[0] <= '9'
	}
	if u, ok := x.(*ast.UnaryExpr); ok && (u.Op == token.SUB || u.Op == token.ADD) {
		x = u.X
	}
	_, lit := x.(*ast.BasicLit)
	return lit
}

// parseCount parses the value of option name as a decimal integer from 1 to
// maxCount, reporting why it is not one; example is a valid option shown in
// messages. As in Go literals, "_" may separate digits (max=1_000_000).
// Leading zeros are refused: in Go, 010 is eight.
func (p *parser) parseCount(v value, name, example string) (int, bool) {
	s := v.Value
	if rest, neg := strings.CutPrefix(s, "-"); neg && rest != "" && strings.Trim(rest, "0123456789_") == "" {
		p.errorf(v.off, "%s must be at least 1; got %s", name, s)
		return 0, false
	}
	if s == "" || strings.Trim(s, "0123456789_") != "" {
		p.errorf(v.off, "%s %q is not a whole number; write e.g. %s", name, s, example)
		return 0, false
	}
	if s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		p.errorf(v.off, "%s %q has a misplaced \"_\"; \"_\" may only separate digits, as in %s=1_000", name, s, name)
		return 0, false
	}
	digits := strings.ReplaceAll(s, "_", "")
	trimmed := strings.TrimLeft(digits, "0")
	switch {
	case trimmed == "":
		p.errorf(v.off, "%s must be at least 1; got %s", name, s)
		return 0, false
	case trimmed != digits:
		p.errorf(v.off, "%s %q has a leading zero, which Go would read as octal; write %s=%s", name, s, name, trimmed)
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > maxCount {
		p.errorf(v.off, "%s %q is too large; it can be at most %d", name, s, maxCount)
		return 0, false
	}
	return int(n), true
}

// quoted reports, if the value of option name starts with a quote, that
// it is written without; what names the value in messages.
func (p *parser) quoted(v value, what string) bool {
	s := v.Value
	if q := s[0]; q != '"' && q != '`' && q != '\'' {
		return false
	}
	if u, err := strconv.Unquote(s); err == nil {
		p.errorf(v.off, "write the %s without quotes: %s=%s", what, v.Name, u)
	} else {
		p.errorf(v.off, "%s %s starts with a quote; write the %s without quotes", what, s, what)
	}
	return true
}

// checkName checks name=, the limit's name in storage keys, errors and
// metrics: any printable text without whitespace, such as
// "Notifier.SendCode" or "sendcode-per-email".
func (p *parser) checkName(v value) {
	s := v.Value
	if p.quoted(v, "name") {
		return
	}
	if !utf8.ValidString(s) {
		p.errorf(v.off, "name %q is not valid UTF-8", s)
		return
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			p.errorf(v.off, "name %q contains whitespace; use e.g. \"-\" or \".\" instead", s)
			return
		case !unicode.IsPrint(r):
			p.errorf(v.off, "name %q contains the unprintable character %U", s, r)
			return
		}
	}
	p.d.Name = s
}
