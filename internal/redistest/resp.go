package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits on what the RESP reader accepts. They only keep garbage (a stream
// that is not RESP at all) from exhausting memory or the stack; real Redis
// traffic stays far below them.
const (
	maxRESPLine    = 64 << 20 // bytes in one line: a simple string, error, number or header
	maxRESPLength  = 1 << 40  // a bulk string's length or an aggregate's element count
	maxRESPNesting = 512      // aggregates (and attributes) within one another
)

// errProtocol reports bytes that are not a well-formed RESP value.
var errProtocol = errors.New("RESP protocol error")

// protocolError returns an error wrapping errProtocol.
func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errProtocol, fmt.Sprintf(format, args...))
}

// respReader reads one RESP value at a time from r and keeps every byte of it
// in raw, so that the proxy forwards exactly what it read.
type respReader struct {
	r   *bufio.Reader
	raw []byte // the bytes of the value being read, so far
}

// readReply reads one complete RESP2 or RESP3 value from r, as a server sends
// it, and returns its bytes exactly as read. kind is the value's type byte
// ('+', '-', ':', '$', '*', '%', '~', '>', '_', ',', '#', '(', '=', '!');
// for a value preceded by attributes ('|') it is the type of the value the
// attributes annotate, so that kind == '>' identifies a push.
//
// It returns io.EOF if r ends before the value's first byte, and
// io.ErrUnexpectedEOF if it ends inside the value. Bytes that are not RESP
// yield an error wrapping errProtocol; r is then positioned somewhere inside
// them. RESP3 streamed strings and aggregates ("$?", "*?"), which Redis never
// sends, count as protocol errors.
func readReply(r *bufio.Reader) (raw []byte, kind byte, err error) {
	rr := respReader{r: r}
	kind, err = rr.value(0)
	if err != nil {
		return nil, 0, rr.eof(err)
	}
	return rr.raw, kind, nil
}

// readRequest reads one request from r, as a client sends it, and returns its
// bytes exactly as read together with its arguments (the command name first).
// A request is either a RESP array of bulk strings or an inline command (a
// line of space-separated words, as typed into telnet). An empty request
// ("*0\r\n", "*-1\r\n" or a blank line), which Redis ignores without replying,
// is returned with no args.
//
// Errors are as for readReply.
func readRequest(r *bufio.Reader) (raw []byte, args []string, err error) {
	rr := respReader{r: r}
	args, err = rr.request()
	if err != nil {
		return nil, nil, rr.eof(err)
	}
	return rr.raw, args, nil
}

// eof turns io.EOF into io.ErrUnexpectedEOF if part of a value has been read.
func (rr *respReader) eof(err error) error {
	if errors.Is(err, io.EOF) && len(rr.raw) > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// request reads one request; see readRequest.
func (rr *respReader) request() ([]string, error) {
	first, err := rr.r.Peek(1)
	if err != nil {
		return nil, err
	}
	if first[0] != '*' {
		// Inline command. Redis accepts a bare "\n" as its terminator.
		line, err := rr.line(false)
		if err != nil {
			return nil, err
		}
		args := strings.Fields(string(line))
		if len(args) == 0 {
			return nil, nil
		}
		return args, nil
	}
	header, err := rr.line(true)
	if err != nil {
		return nil, err
	}
	n, err := parseLength(header, true)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	args := make([]string, 0, min(n, 64))
	for range n {
		header, err := rr.line(true)
		if err != nil {
			return nil, err
		}
		if header[0] != '$' {
			return nil, protocolError("request argument of type %q, want a bulk string", header[0])
		}
		size, err := parseLength(header, false)
		if err != nil {
			return nil, err
		}
		start := len(rr.raw)
		if err := rr.bulk(size); err != nil {
			return nil, err
		}
		args = append(args, string(rr.raw[start:start+int(size)]))
	}
	return args, nil
}

// value reads one value at the given nesting depth and returns its type byte
// (for attributes, that of the annotated value).
func (rr *respReader) value(depth int) (byte, error) {
	if depth > maxRESPNesting {
		return 0, protocolError("aggregates nested more than %d deep", maxRESPNesting)
	}
	line, err := rr.line(true)
	if err != nil {
		return 0, err
	}
	kind, text := line[0], line[1:]
	switch kind {
	case '+', '-': // simple string, simple error: any text
		return kind, nil
	case ':': // integer
		if _, err := strconv.ParseInt(string(text), 10, 64); err != nil {
			return 0, protocolError("integer %q", text)
		}
		return kind, nil
	case '(': // big number
		digits := strings.TrimPrefix(string(text), "-")
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return 0, protocolError("big number %q", text)
		}
		return kind, nil
	case ',': // double, including "inf", "-inf" and "nan"
		if len(text) == 0 {
			return 0, protocolError("empty double")
		}
		return kind, nil
	case '#': // boolean
		if string(text) != "t" && string(text) != "f" {
			return 0, protocolError("boolean %q", text)
		}
		return kind, nil
	case '_': // null
		if len(text) != 0 {
			return 0, protocolError("null with payload %q", text)
		}
		return kind, nil
	case '$', '=', '!': // bulk string (RESP2 null if -1), verbatim string, blob error
		n, err := parseLength(line, kind == '$')
		if err != nil {
			return 0, err
		}
		if n < 0 {
			return kind, nil
		}
		return kind, rr.bulk(n)
	case '*', '~', '>', '%', '|': // array (RESP2 null if -1), set, push, map, attributes
		n, err := parseLength(line, kind == '*')
		if err != nil {
			return 0, err
		}
		if kind == '%' || kind == '|' {
			n *= 2 // keys and values
		}
		for range max(n, 0) {
			if _, err := rr.value(depth + 1); err != nil {
				return 0, err
			}
		}
		if kind == '|' {
			// Attributes are followed by the value they annotate, which is
			// the reply proper.
			return rr.value(depth + 1)
		}
		return kind, nil
	default:
		return 0, protocolError("unknown type byte %q", kind)
	}
}

// line reads through the next "\n", appends it to raw, and returns the line
// without its terminator. With crlf the terminator must be "\r\n", and the
// line must not be empty; otherwise a bare "\n" also ends it, as in an inline
// command.
func (rr *respReader) line(crlf bool) ([]byte, error) {
	start := len(rr.raw)
	for {
		chunk, err := rr.r.ReadSlice('\n')
		rr.raw = append(rr.raw, chunk...)
		if len(rr.raw)-start > maxRESPLine {
			return nil, protocolError("line longer than %d bytes", maxRESPLine)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
	line := rr.raw[start : len(rr.raw)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	} else if crlf {
		return nil, protocolError("line %q not terminated by CRLF", line)
	}
	if crlf && len(line) == 0 {
		return nil, protocolError("empty line where a type byte was expected")
	}
	return line, nil
}

// bulk reads n bytes of payload and the "\r\n" after them into raw. The
// buffer grows as the bytes arrive, so a huge announced length costs nothing
// until its payload really comes.
func (rr *respReader) bulk(n int64) error {
	want := n + 2
	for want > 0 {
		chunk, err := rr.r.Peek(int(min(want, int64(rr.r.Size()))))
		rr.raw = append(rr.raw, chunk...)
		_, _ = rr.r.Discard(len(chunk))
		want -= int64(len(chunk))
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	if end := rr.raw[len(rr.raw)-2:]; end[0] != '\r' || end[1] != '\n' {
		return protocolError("%d-byte payload not followed by CRLF", n)
	}
	return nil
}

// parseLength parses the length or element count in a header line such as
// "$5" or "*3" (type byte included). -1 is accepted only if null is true.
func parseLength(header []byte, null bool) (int64, error) {
	text := string(header[1:])
	if text == "?" {
		return 0, protocolError("streamed %q values are not supported", header[0])
	}
	n, err := strconv.ParseInt(text, 10, 64)
	switch {
	case err != nil || n < -1 || n > maxRESPLength:
		return 0, protocolError("length %q", header)
	case n == -1 && !null:
		return 0, protocolError("null length in %q", header)
	}
	return n, nil
}
