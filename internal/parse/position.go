package parse

import "go/token"

// locator turns byte offsets within one comment's text into positions.
//
// A // comment is a single line, but the text is taken as given: should it
// hold a newline (as a fuzzer may pass), later bytes are placed on later
// lines, so a position never claims a column its line does not have.
type locator struct {
	text string
	base token.Position
}

// newLocator returns a locator for text whose first byte is at base. A base
// without a line or column (the zero Position, say) is taken to be line 1,
// column 1, so that every position handed out is a real one.
func newLocator(text string, base token.Position) locator {
	if base.Line < 1 {
		base.Line = 1
	}
	if base.Column < 1 {
		base.Column = 1
	}
	if base.Offset < 0 {
		base.Offset = 0
	}
	return locator{text: text, base: base}
}

// at returns the position of the byte at offset i of the text. Offsets
// outside the text are clamped to its last byte, so that an error can never
// point past the comment.
func (l locator) at(i int) token.Position {
	if i >= len(l.text) {
		i = len(l.text) - 1
	}
	if i < 0 {
		i = 0
	}
	return l.raw(i)
}

// raw is at without clamping; Option.ValuePos of an empty value at the end
// of the text is the only position that may lie just past it.
func (l locator) raw(i int) token.Position {
	p := l.base
	p.Offset += i
	lineStart := -1
	for j := 0; j < i && j < len(l.text); j++ {
		if l.text[j] == '\n' {
			p.Line++
			lineStart = j
		}
	}
	if lineStart < 0 {
		p.Column += i
	} else {
		p.Column = i - lineStart
	}
	return p
}
