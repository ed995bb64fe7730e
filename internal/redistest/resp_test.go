package redistest

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// respReplies are well-formed replies, one value each, covering every RESP2
// and RESP3 type, with kind the type readReply must report.
var respReplies = []struct {
	name  string
	input string
	kind  byte
}{
	{"simple string", "+OK\r\n", '+'},
	{"empty simple string", "+\r\n", '+'},
	{"simple error", "-ERR unknown command 'X'\r\n", '-'},
	{"integer", ":1000\r\n", ':'},
	{"negative integer", ":-42\r\n", ':'},
	{"bulk string", "$5\r\nhello\r\n", '$'},
	{"empty bulk string", "$0\r\n\r\n", '$'},
	{"bulk string holding CRLF", "$6\r\na\r\n\r\nb\r\n", '$'},
	{"null bulk string", "$-1\r\n", '$'},
	{"array", "*3\r\n$3\r\nfoo\r\n:1\r\n+bar\r\n", '*'},
	{"empty array", "*0\r\n", '*'},
	{"null array", "*-1\r\n", '*'},
	{"array holding nulls", "*3\r\n$-1\r\n*-1\r\n_\r\n", '*'},
	{"null", "_\r\n", '_'},
	{"double", ",3.14159\r\n", ','},
	{"double exponent", ",1.5e-10\r\n", ','},
	{"double inf", ",inf\r\n", ','},
	{"double -inf", ",-inf\r\n", ','},
	{"double nan", ",nan\r\n", ','},
	{"boolean true", "#t\r\n", '#'},
	{"boolean false", "#f\r\n", '#'},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", '('},
	{"negative big number", "(-3492890328409238509324850943850943825024385\r\n", '('},
	{"verbatim string", "=15\r\ntxt:Some string\r\n", '='},
	{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", '!'},
	{"map", "%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n:2\r\n", '%'},
	{"empty map", "%0\r\n", '%'},
	{"set", "~3\r\n+a\r\n:1\r\n#t\r\n", '~'},
	{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", '>'},
	{
		"attributes before an array",
		"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
		'*',
	},
	{"attributes before a push", "|1\r\n+k\r\n+v\r\n>2\r\n+invalidate\r\n*1\r\n+key\r\n", '>'},
	{"attributes inside an array", "*2\r\n|1\r\n+ttl\r\n:3600\r\n+a\r\n:2\r\n", '*'},
	{
		"nested aggregates",
		"*4\r\n%2\r\n+k\r\n~2\r\n:1\r\n#f\r\n*2\r\n_\r\n$-1\r\n%0\r\n" +
			">2\r\n+p\r\n*1\r\n(12\r\n" +
			"~1\r\n*1\r\n=8\r\nmkd:text\r\n" +
			"*2\r\n!3\r\nERR\r\n-ERR x\r\n",
		'*',
	},
	{"deep nesting", strings.Repeat("*1\r\n", maxRESPNesting) + ":1\r\n", '*'},
	{"large bulk string", "$1048576\r\n" + strings.Repeat("x", 1<<20) + "\r\n", '$'},
}

// TestReadReplyEveryType reads every type from a stream that continues after the
// value, so the reader must stop exactly at the value's end. A 16-byte buffer
// (bufio's minimum) makes lines and payloads span several reads.
func TestReadReplyEveryType(t *testing.T) {
	for _, tc := range respReplies {
		for _, size := range []int{16, 4096} {
			r := bufio.NewReaderSize(strings.NewReader(tc.input+"+next\r\n"), size)
			raw, kind, err := readReply(r)
			require.NoError(t, err, "%s (buffer %d)", tc.name, size)
			require.Equal(t, tc.input, string(raw), "%s (buffer %d)", tc.name, size)
			require.Equal(t, string(tc.kind), string(kind), "%s (buffer %d)", tc.name, size)

			raw, kind, err = readReply(r)
			require.NoError(t, err, "%s: the value after it", tc.name)
			require.Equal(t, "+next\r\n", string(raw), "%s: the value after it", tc.name)
			require.Equal(t, byte('+'), kind)
			_, _, err = readReply(r)
			require.ErrorIs(t, err, io.EOF, "%s: end of stream", tc.name)
		}
	}
}

func TestReadReplyRejectsMalformedInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  error
	}{
		{"empty stream", "", io.EOF},
		{"no line end", "+OK", io.ErrUnexpectedEOF},
		{"LF without CR", "+OK\n", errProtocol},
		{"empty line", "\r\n", errProtocol},
		{"unknown type", "@1\r\n", errProtocol},
		{"integer not a number", ":12a\r\n", errProtocol},
		{"empty integer", ":\r\n", errProtocol},
		{"big number with a fraction", "(1.5\r\n", errProtocol},
		{"empty big number", "(\r\n", errProtocol},
		{"empty double", ",\r\n", errProtocol},
		{"boolean not t or f", "#x\r\n", errProtocol},
		{"null with payload", "_0\r\n", errProtocol},
		{"bulk length not a number", "$abc\r\n", errProtocol},
		{"bulk length below -1", "$-2\r\n", errProtocol},
		{"bulk length too large", "$1099511627777\r\n", errProtocol},
		{"bulk payload cut short", "$5\r\nhel", io.ErrUnexpectedEOF},
		{"bulk payload without CRLF", "$5\r\nhelloXX", errProtocol},
		{"bulk payload without its CRLF at the end", "$5\r\nhello", io.ErrUnexpectedEOF},
		{"null verbatim string", "=-1\r\n", errProtocol},
		{"null map", "%-1\r\n", errProtocol},
		{"null set", "~-1\r\n", errProtocol},
		{"null push", ">-1\r\n", errProtocol},
		{"null attributes", "|-1\r\n", errProtocol},
		{"array cut short", "*2\r\n:1\r\n", io.ErrUnexpectedEOF},
		{"map missing a value", "%1\r\n+k\r\n", io.ErrUnexpectedEOF},
		{"attributes without their value", "|1\r\n+k\r\n+v\r\n", io.ErrUnexpectedEOF},
		{"malformed element", "*2\r\n:1\r\n:x\r\n", errProtocol},
		{"streamed string", "$?\r\n;4\r\nHell\r\n;0\r\n", errProtocol},
		{"streamed array", "*?\r\n:1\r\n.\r\n", errProtocol},
		{"nested too deep", strings.Repeat("*1\r\n", maxRESPNesting+1) + ":1\r\n", errProtocol},
		{"attributes chained too deep", strings.Repeat("|0\r\n", maxRESPNesting+1) + ":1\r\n", errProtocol},
	} {
		_, _, err := readReply(bufio.NewReaderSize(strings.NewReader(tc.input), 16))
		require.ErrorIs(t, err, tc.want, tc.name)
	}
}

func TestReadRequestForProxy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		args  []string
	}{
		{"command array", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n", []string{"SET", "k", "value"}},
		{"binary argument", "*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n", []string{"ECHO", "a\r\nb"}},
		{"empty argument", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", []string{"ECHO", ""}},
		{"inline command", "PING\r\n", []string{"PING"}},
		{"inline command with LF only", "SET  k   v\n", []string{"SET", "k", "v"}},
		{"empty array", "*0\r\n", nil},
		{"null array", "*-1\r\n", nil},
		{"blank inline line", " \r\n", nil},
	} {
		r := bufio.NewReaderSize(strings.NewReader(tc.input+"*1\r\n$4\r\nPING\r\n"), 16)
		raw, args, err := readRequest(r)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.input, string(raw), tc.name)
		require.Equal(t, tc.args, args, tc.name)

		_, args, err = readRequest(r)
		require.NoError(t, err, "%s: the request after it", tc.name)
		require.Equal(t, []string{"PING"}, args, "%s: the request after it", tc.name)
		_, _, err = readRequest(r)
		require.ErrorIs(t, err, io.EOF, "%s: end of stream", tc.name)
	}

	for _, tc := range []struct {
		name  string
		input string
		want  error
	}{
		{"empty stream", "", io.EOF},
		{"argument not a bulk string", "*1\r\n:1\r\n", errProtocol},
		{"argument cut short", "*1\r\n$4\r\nPI", io.ErrUnexpectedEOF},
		{"missing argument", "*2\r\n$4\r\nECHO\r\n", io.ErrUnexpectedEOF},
		{"bad count", "*x\r\n", errProtocol},
		{"bad argument length", "*1\r\n$-1\r\n", errProtocol},
		{"inline command cut short", "PIN", io.ErrUnexpectedEOF},
	} {
		_, _, err := readRequest(bufio.NewReaderSize(strings.NewReader(tc.input), 16))
		require.ErrorIs(t, err, tc.want, tc.name)
	}
}

// FuzzReadReply feeds arbitrary bytes to readReply until it fails. It must
// neither panic nor hang (every value read consumes at least three bytes, and
// a failed read ends the loop), and what it returns must be the input's bytes
// in order, each value reading back to itself.
func FuzzReadReply(f *testing.F) {
	for _, tc := range respReplies {
		if len(tc.input) < 1024 {
			f.Add([]byte(tc.input))
		}
	}
	f.Add([]byte("*2\r\n:1\r\n"))
	f.Add([]byte("$5\r\nhelloXX"))
	f.Add([]byte("*1099511627776\r\n"))
	f.Add([]byte("$1099511627776\r\nx"))
	f.Add([]byte(strings.Repeat("|0\r\n", 600) + ":1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		var consumed []byte
		for {
			raw, kind, err := readReply(r)
			if err != nil {
				require.Nil(t, raw)
				break
			}
			require.GreaterOrEqual(t, len(raw), 3)
			consumed = append(consumed, raw...)
			require.True(t, bytes.HasPrefix(data, consumed), "returned bytes must be the input's, in order")

			again, againKind, err := readReply(bufio.NewReader(bytes.NewReader(raw)))
			require.NoError(t, err, "a value read must read back")
			require.Equal(t, raw, again)
			require.Equal(t, kind, againKind)
		}
	})
}

// FuzzReadRequest does for readRequest what FuzzReadReply does for readReply.
func FuzzReadRequest(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"))
	f.Add([]byte("PING\r\nSET a b\n*0\r\n"))
	f.Add([]byte("*1\r\n:1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		var consumed []byte
		for {
			raw, args, err := readRequest(r)
			if err != nil {
				break
			}
			require.NotEmpty(t, raw)
			consumed = append(consumed, raw...)
			require.True(t, bytes.HasPrefix(data, consumed), "returned bytes must be the input's, in order")

			_, again, err := readRequest(bufio.NewReader(bytes.NewReader(raw)))
			require.NoError(t, err, "a request read must read back")
			require.Equal(t, args, again)
		}
	})
}
