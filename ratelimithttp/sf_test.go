package ratelimithttp_test

import (
	"fmt"
	"strconv"
)

// sfItem is one parsed RFC 9651 Item whose bare item is a String and whose
// parameters are Integers: the shape of both RateLimit fields.
type sfItem struct {
	name   string
	params map[string]int64
	order  []string
}

// parseSFItem parses s strictly by the RFC 9651 grammar for an sf-item with
// an sf-string bare item and sf-integer parameters, so that tests reject
// anything a conforming client parser would reject.
func parseSFItem(s string) (sfItem, error) {
	it := sfItem{params: map[string]int64{}}
	if len(s) == 0 || s[0] != '"' {
		return it, fmt.Errorf("%q: item must start with an sf-string", s)
	}
	i := 1
	var name []byte
	for {
		if i >= len(s) {
			return it, fmt.Errorf("%q: unterminated sf-string", s)
		}
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) || (s[i+1] != '"' && s[i+1] != '\\') {
				return it, fmt.Errorf("%q: bad escape at %d", s, i)
			}
			name = append(name, s[i+1])
			i += 2
			continue
		case c == '"':
			i++
		case c < 0x20 || c > 0x7e:
			return it, fmt.Errorf("%q: byte %#x not allowed in an sf-string", s, c)
		default:
			name = append(name, c)
			i++
			continue
		}
		break
	}
	it.name = string(name)
	for i < len(s) {
		if s[i] != ';' {
			return it, fmt.Errorf("%q: expected ';' at %d", s, i)
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		start := i
		if i >= len(s) || !(s[i] >= 'a' && s[i] <= 'z' || s[i] == '*') {
			return it, fmt.Errorf("%q: bad parameter key at %d", s, i)
		}
		for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9' || s[i] == '_' || s[i] == '-' || s[i] == '.' || s[i] == '*') {
			i++
		}
		key := s[start:i]
		if i >= len(s) || s[i] != '=' {
			return it, fmt.Errorf("%q: parameter %s has no integer value", s, key)
		}
		i++
		start = i
		if i < len(s) && s[i] == '-' {
			i++
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		digits := s[start:i]
		if len(digits) == 0 || len(digits) > 16 || digits == "-" {
			return it, fmt.Errorf("%q: parameter %s is not an sf-integer", s, key)
		}
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return it, err
		}
		if _, dup := it.params[key]; dup {
			return it, fmt.Errorf("%q: duplicate parameter %s", s, key)
		}
		it.params[key] = v
		it.order = append(it.order, key)
	}
	return it, nil
}
