package parse

import (
	"errors"
	goparser "go/parser"
	"go/scanner"
)

// checkKey splits key= at top-level commas and checks that each part is a Go
// expression. Only syntax is checked here: whether the expression makes
// sense in the method's scope is the generator's business.
func (p *parser) checkKey(v value) {
	if !v.lexOK {
		return // the unclosed bracket or literal is already reported
	}
	parts := splitTopLevel(v.Value)
	lastComma := -1 // "key=," has two empty parts but one comma to blame
	for k, part := range parts {
		start, end := part[0], part[1]
		for start < end && isSpace(v.Value[start]) {
			start++
		}
		end = trimRightSpace(v.Value, start, end)
		if start == end {
			// Point at the comma that makes the part empty: the one after
			// it, or for a trailing comma the one before.
			comma := part[1]
			if k == len(parts)-1 {
				comma = part[0] - 1
			}
			if comma != lastComma {
				p.errorf(v.off+comma, "empty key part; remove the extra \",\"")
			}
			lastComma = comma
			continue
		}
		text := v.Value[start:end]
		if _, err := goparser.ParseExpr(text); err != nil {
			p.errorf(v.off+start, "key part %q is not a Go expression: %s", text, exprMessage(err))
			continue
		}
		p.d.Key = append(p.d.Key, Expr{Text: text, Pos: p.loc.at(v.off + start)})
	}
}

// splitTopLevel returns the [start, end) offsets of the parts of s separated
// by commas outside brackets and literals. It returns at least one part.
func splitTopLevel(s string) [][2]int {
	var parts [][2]int
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			j := skipLiteral(s, i)
			if j < 0 {
				return append(parts, [2]int{start, len(s)})
			}
			i = j - 1
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, [2]int{start, i})
				start = i + 1
			}
		}
	}
	return append(parts, [2]int{start, len(s)})
}

// exprMessage returns go/parser's message without its position, which is
// relative to the part rather than to the file.
func exprMessage(err error) string {
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return list[0].Msg
	}
	return err.Error()
}
