package parse

// This file finds where options begin and end. A value runs until
// whitespace, at top level, followed by something that can only be the next
// option:
//
//   - a name and "=" (not "=="), as in "window=60s" or "window =60s": no Go
//     expression holds "name =" at top level, since assignment is a
//     statement; or
//   - a known option name standing alone after an operand, as in
//     "key=req.Email window max=3": two operands side by side are never Go;
//   - or, with or without whitespace, "," or ";" followed by "name=", as in
//     "window=1s,max=3", which is reported as a misused separator.
//
// "Top level" means outside (), [], {} and outside "...", `...` and '...'
// literals; brackets and literals are only tracked in expression values
// (key=, cost=, max=), so that a stray quote in another value cannot swallow
// the rest.

// scanMode says how a value is scanned.
type scanMode int

const (
	// flat values (window, name, unknown options) end at the next option
	// boundary, brackets and quotes notwithstanding.
	flat scanMode = iota
	// expr values (key, cost, max) are Go expressions: boundaries inside
	// brackets and literals do not count.
	expr
)

// valueScan is the result of scanning one value.
type valueScan struct {
	end  int // offset just past the value, trailing whitespace excluded
	next int // offset where the next option (or a comment) starts
	// open is the offset of an unclosed bracket or unterminated literal
	// that made an expr scan run to the end of the text, or -1.
	open int
}

// scanValue scans the value starting at offset start of s.
func scanValue(s string, start int, mode scanMode) valueScan {
	var stack []int // offsets of open brackets
	i := start
	for i < len(s) {
		c := s[i]
		switch {
		case isCommentStart(s, i) || isMisusedSeparator(s, i) && len(stack) == 0:
			return valueScan{end: trimRightSpace(s, start, i), next: i, open: -1}
		case mode == expr && (c == '"' || c == '\'' || c == '`'):
			j := skipLiteral(s, i)
			if j < 0 {
				return valueScan{end: len(s), next: len(s), open: i}
			}
			i = j
			continue
		case mode == expr && (c == '(' || c == '[' || c == '{'):
			stack = append(stack, i)
		case mode == expr && (c == ')' || c == ']' || c == '}'):
			// A mismatched closer is left for go/parser to report.
			if n := len(stack); n > 0 && closerOf(s[stack[n-1]]) == c {
				stack = stack[:n-1]
			}
		case isSpace(c) && len(stack) == 0:
			j := i
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j == len(s) || isCommentStart(s, j) || isOptionStart(s, j) || isBareOption(s, i, j) {
				return valueScan{end: i, next: j, open: -1}
			}
			i = j
			continue
		}
		i++
	}
	if n := len(stack); n > 0 {
		return valueScan{end: len(s), next: len(s), open: stack[n-1]}
	}
	return valueScan{end: trimRightSpace(s, start, len(s)), next: len(s), open: -1}
}

// isMisusedSeparator reports whether a "," or ";" at offset i of s is
// followed by an option, as in "window=1s,max=3": options are separated by
// whitespace, and neither "key=a,max=3" nor "key=a;max=3" is Go.
func isMisusedSeparator(s string, i int) bool {
	if s[i] != ',' && s[i] != ';' {
		return false
	}
	j := i + 1
	for j < len(s) && isHSpace(s[j]) {
		j++
	}
	return isOptionStart(s, j)
}

// optionName reports whether an option "name=" (or "name =") starts at
// offset i of s, returning the end of the name and the offset of "=".
func optionName(s string, i int) (nameEnd, eq int, ok bool) {
	nameEnd = nameAt(s, i)
	if nameEnd == i {
		return 0, 0, false
	}
	eq = nameEnd
	for eq < len(s) && isHSpace(s[eq]) {
		eq++
	}
	if eq < len(s) && s[eq] == '=' && (eq+1 == len(s) || s[eq+1] != '=') {
		return nameEnd, eq, true
	}
	return 0, 0, false
}

func isOptionStart(s string, i int) bool {
	_, _, ok := optionName(s, i)
	return ok
}

// nameAt returns the end of the option name starting at offset i of s, or i
// if none does. Names are [A-Za-z][A-Za-z0-9_-]*.
func nameAt(s string, i int) int {
	if i >= len(s) || !isLetter(s[i]) {
		return i
	}
	j := i + 1
	for j < len(s) && isNameByte(s[j]) {
		j++
	}
	return j
}

// isBareOption reports whether the whitespace s[ws:word] is followed by a
// known or reserved option name that stands alone (no "=") right after an
// operand, as in "key=req.Email window max=3".
func isBareOption(s string, ws, word int) bool {
	if ws == 0 || !endsOperand(s[ws-1]) {
		return false
	}
	end := nameAt(s, word)
	if end == word || !isOptionName(s[word:end]) {
		return false
	}
	return end == len(s) || isSpace(s[end]) || isCommentStart(s, end)
}

// endsOperand reports whether c can be the last byte of a Go operand.
func endsOperand(c byte) bool {
	return isNameByte(c) || c == ')' || c == ']' || c == '}' || c == '"' || c == '\'' || c == '`' || c >= 0x80
}

// skipLiteral returns the offset just past the string or rune literal that
// starts at offset i of s, or -1 if it is not terminated on its line.
func skipLiteral(s string, i int) int {
	quote := s[i]
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == quote:
			return j + 1
		case c == '\\' && quote != '`':
			j++ // skip the escaped byte
		case c == '\n' && quote != '`':
			return -1
		}
	}
	return -1
}

// closerOf returns the bracket that closes open.
func closerOf(open byte) byte {
	switch open {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// isCommentStart reports whether a // or /* comment starts at offset i of s.
func isCommentStart(s string, i int) bool {
	return i+1 < len(s) && s[i] == '/' && (s[i+1] == '/' || s[i+1] == '*')
}

// trimRightSpace returns the offset just past the last non-space byte of
// s[start:end], or start if there is none.
func trimRightSpace(s string, start, end int) int {
	for end > start && isSpace(s[end-1]) {
		end--
	}
	return end
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHSpace(c byte) bool { return c == ' ' || c == '\t' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isNameByte(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '_' || c == '-'
}
