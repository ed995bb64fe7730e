package redistest

import (
	"strings"
	"sync"
)

// maxLogBytes bounds the log kept per server: enough for the lines that
// explain a failure, without letting a chatty long test grow memory.
const maxLogBytes = 256 << 10

// logBuffer collects a redis-server's stdout and stderr (where it logs, since
// it is started with an empty logfile) so failures can quote the server's own
// explanation. It is written by os/exec's copying goroutine and read by tests.
type logBuffer struct {
	mu      sync.Mutex
	buf     []byte
	written int64 // total bytes ever written, including dropped ones
}

// Write appends p, dropping the oldest bytes beyond maxLogBytes.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	b.written += int64(len(p))
	if over := len(b.buf) - maxLogBytes; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// mark returns a position to pass to since later.
func (b *logBuffer) mark() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.written
}

// since returns what was written after mark, as far as it is still kept.
func (b *logBuffer) since(mark int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	dropped := b.written - int64(len(b.buf))
	start := max(mark-dropped, 0)
	return string(b.buf[start:])
}

// tail returns the last n lines.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	text := strings.TrimRight(string(b.buf), "\n")
	b.mu.Unlock()
	if text == "" {
		return "(no output)"
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
