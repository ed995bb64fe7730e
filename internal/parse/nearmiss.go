package parse

import (
	"go/token"
	"strings"
)

// NearMiss reports a comment that looks like a misspelt directive and would
// otherwise be silently ignored, with a message saying how to fix it. It
// returns nil for a real directive (Line's business) and for anything
// unrelated.
//
// The rule: after "//" (or "/*"), optional spaces or tabs and an optional
// "+", the first word, compared ignoring case, "-" and "_", is ratelimit,
// ratelimits or ratelimiter, and ends at a space, tab, ":" or "=" or at the
// end of the comment. The separator is ":" or "=" after the word, with
// optional spaces around ":"; ":=", "==" and " = " are code, not separators.
// What follows decides:
//
//   - Written tight against "//" or after "+" (as //rateLimit:,
//     //rate_limit=, //ratelimit, // +ratelimit:...), the comment warns if
//     the word is followed by a separator, by nothing, or by an option
//     name=value: such a comment is shaped like a directive.
//   - Written after a space (as "// ratelimit:key=a"), which is also what
//     gofmt makes of a doc-comment line that is not an exact directive, it
//     warns only if the word is followed by a separator and then nothing or
//     an option name=value, or by whitespace and an option name=value. Prose
//     such as "// ratelimit: the calls are..." or "// RateLimit returns..."
//     does not warn.
func NearMiss(text string, pos token.Position) *Error {
	if strings.HasPrefix(text, Prefix) {
		return nil
	}
	var body string
	block := strings.HasPrefix(text, "/*")
	switch {
	case block:
		body = strings.TrimSuffix(text[2:], "*/")
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			body = body[:nl]
		}
	case strings.HasPrefix(text, "//"):
		body = text[2:]
	default:
		return nil
	}

	var reasons []string
	if block {
		reasons = append(reasons, "it is a /* */ comment, but directives are // comments")
	}
	i := 0
	for i < len(body) && isHSpace(body[i]) {
		i++
	}
	spaced := i > 0
	if spaced && !block {
		reasons = append(reasons, "there is a space after \"//\" (gofmt inserts one in doc comments when the rest is not an exact directive)")
	}
	plus := i < len(body) && body[i] == '+'
	if plus {
		reasons = append(reasons, "there is a \"+\" after \"//\"")
		i++
	}
	wordStart := i
	for i < len(body) && isNameByte(body[i]) {
		i++
	}
	word := body[wordStart:i]
	if !isRatelimitWord(word) {
		return nil
	}
	if word != "ratelimit" {
		reasons = append(reasons, "it is spelt "+word+" rather than ratelimit")
	}

	// The separator: ideally ":" right after the word.
	j := i
	for j < len(body) && isHSpace(body[j]) {
		j++
	}
	var sep byte
	if j < len(body) && (body[j] == ':' || body[j] == '=') {
		sep = body[j]
		if j+1 < len(body) && body[j+1] == '=' || sep == '=' && j > i {
			return nil // ":=", "==" or " = ": commented-out code
		}
		if j > i {
			reasons = append(reasons, "there is a space before \""+string(sep)+"\"")
		}
		j++
		for j < len(body) && isHSpace(body[j]) {
			j++
		}
	} else if i < len(body) && !isHSpace(body[i]) {
		return nil // the word runs on, as in "ratelimit.Do()" or "ratelimiter's"
	}
	rest := strings.TrimRight(body[j:], " \t")
	optionLike := rest == "" || isOptionStart(rest, 0)
	tight := (!spaced || plus) && !block

	switch {
	case sep != 0 && (tight || optionLike):
	case sep == 0 && optionLike && (tight || rest != ""):
	default:
		return nil
	}
	switch sep {
	case 0:
		reasons = append(reasons, "there is no \":\" after ratelimit")
	case '=':
		reasons = append(reasons, "it has \"=\" where \":\" belongs")
	}

	fix := "write e.g. " + Prefix + "key=req.Email window=60s max=3"
	if rest != "" {
		fix = "write " + Prefix + rest
	}
	loc := newLocator(text, pos)
	return &Error{
		Pos: loc.at(0),
		Msg: "comment looks like a " + Prefix + " directive but is ignored: " + strings.Join(reasons, "; ") + "; " + fix,
	}
}

// isRatelimitWord reports whether word is ratelimit, ratelimits or
// ratelimiter, ignoring case, "-" and "_".
func isRatelimitWord(word string) bool {
	if len(word) > len("rate-_limiter")+4 {
		return false
	}
	w := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(word))
	return w == "ratelimit" || w == "ratelimits" || w == "ratelimiter"
}
