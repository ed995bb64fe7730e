package redistest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLogBufferKeepsTheNewestLines(t *testing.T) {
	var b logBuffer
	require.Equal(t, "(no output)", b.tail(3))

	for i := range maxLogBytes / 4 {
		_, _ = b.Write([]byte{'a' + byte(i%26), 'b', 'c', '\n'})
	}
	mark := b.mark()
	_, _ = b.Write([]byte("Address already in use\nlast\n"))

	require.LessOrEqual(t, len(b.buf), maxLogBytes)
	require.Equal(t, "Address already in use\nlast", b.tail(2))
	require.Equal(t, "Address already in use\nlast\n", b.since(mark))
	require.True(t, strings.HasSuffix(b.since(0), "last\n"), "a mark older than the kept text yields all kept text")
}
