package ratelimithttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
)

// CountStatus makes Middleware count only the admitted requests whose
// response has one of statuses, as login and token endpoints are
// protected: CountStatus(401, 403) counts failed attempts only. Every other
// admitted request gives its unit back once the next handler returns (see
// runtime.Hold); one whose handler panics keeps it. A response's status
// is the first final one written, 200 when the handler writes a body
// first or nothing at all; a hijacked connection's request keeps its unit.
//
// The limiter must be a runtime.Holder, as the Limiters of memlimit and
// redislimit and the one Operate returns are; Middleware panics otherwise.
func CountStatus(statuses ...int) Option {
	s := slices.Clone(statuses)
	return func(c *middlewareConfig) {
		c.count = func(status int) bool { return slices.Contains(s, status) }
	}
}

// statusWriter records the status of the response its handler writes.
// Like quotaWriter, it keeps Flush, Hijack and ReadFrom and unwraps to the
// ResponseWriter it wraps.
type statusWriter struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

// final returns the response's status once the handler returned.
func (w *statusWriter) final() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// WriteHeader implements http.ResponseWriter.
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote()
	return w.ResponseWriter.Write(p)
}

// wrote records a body written before any status: 200.
func (w *statusWriter) wrote() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
}

// ReadFrom implements io.ReaderFrom, keeping net/http's sendfile path.
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	w.wrote()
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, src)
}

// Flush implements http.Flusher.
func (w *statusWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController calls to flush.
func (w *statusWriter) FlushError() error {
	w.wrote()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return conn, rw, err
}

// Unwrap returns the ResponseWriter w wraps, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
