package runtime

import "strconv"

// Key joins the parts of a composite key so that distinct tuples never yield
// the same key: Key("a:b", "c") differs from Key("a", "b:c"), whatever bytes
// the parts hold. Each part is written as its length, a colon and its bytes.
//
// A single-part key needs no joining: generated code passes the string itself.
// Use one arity per Limit; a one-part key and a multi-part key of the same
// Limit are not guaranteed to differ.
func Key(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + 4
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = AppendKeyPart(b, p)
	}
	return string(b)
}

// AppendKeyPart appends one part of a composite key to b in the encoding Key
// uses. Generated code uses it to build keys from several values with a
// single allocation.
func AppendKeyPart(b []byte, part string) []byte {
	b = strconv.AppendInt(b, int64(len(part)), 10)
	b = append(b, ':')
	return append(b, part...)
}

// AppendKeyInt appends an integer part of a composite key to b, encoded as
// AppendKeyPart would encode its decimal form, without an intermediate
// string.
func AppendKeyInt(b []byte, v int64) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], v, 10)
	b = strconv.AppendInt(b, int64(len(d)), 10)
	b = append(b, ':')
	return append(b, d...)
}

// AppendKeyUint is AppendKeyInt for unsigned integers.
func AppendKeyUint(b []byte, v uint64) []byte {
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], v, 10)
	b = strconv.AppendInt(b, int64(len(d)), 10)
	b = append(b, ':')
	return append(b, d...)
}
