package ratelimithttp

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// QuotaHeaders returns a handler that serves next and, just before next's
// response header is written, adds the RateLimit-Policy and RateLimit
// fields (as SetHeaders writes them) of every limit that a limiter made by
// RecordDecisions decided with the request's context. So a successful
// response, not only a 429, tells the client the quota its calls left:
//
//	codes := notify.NewRateLimitedCodeService(svc, ratelimithttp.RecordDecisions(limiter))
//	mux.HandleFunc("POST /codes", sendCode) // calls codes.SendCode(r.Context(), ...)
//	srv := &http.Server{Handler: ratelimithttp.QuotaHeaders(mux)}
//
// Each limit gets one item, from its latest decision, in the order the
// limits were first decided. A limit that already has an item in either
// field keeps it: the handler (or WriteError, on a 429) had the last word.
// Decisions taken after the header was written, for example while
// streaming the body, are not shown, and nor is anything after a hijack.
//
// The header counts as written at the first Write, ReadFrom, Flush or
// WriteHeader with a final status (1xx other than 101 do not count), or
// when next returns having written nothing. The ResponseWriter next gets
// keeps Flush, Hijack and ReadFrom (reporting http.ErrNotSupported through
// http.ResponseController where the underlying one cannot) and unwraps to
// it. Nested QuotaHeaders add each item once.
//
// QuotaHeaders panics if next is nil, like Middleware.
func QuotaHeaders(next http.Handler) http.Handler {
	if next == nil {
		panic("ratelimithttp: QuotaHeaders applied to a nil http.Handler")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if recorderFrom(r.Context()) != nil {
			// An enclosing QuotaHeaders records and writes already.
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{}
		qw := &quotaWriter{ResponseWriter: w, rec: rec}
		next.ServeHTTP(qw, r.WithContext(withRecorder(r.Context(), rec)))
		qw.apply()
	})
}

// quotaWriter adds the recorded fields just before the header is written.
// A handler must not use its ResponseWriter from several goroutines, so
// done needs no lock; only the recorder, which limiters update from any
// goroutine, does.
type quotaWriter struct {
	http.ResponseWriter
	rec  *recorder
	done bool
}

// apply adds the fields once. After a hijack it does nothing.
func (w *quotaWriter) apply() {
	if w.done {
		return
	}
	w.done = true
	setRecorded(w.ResponseWriter.Header(), w.rec.snapshot())
}

// WriteHeader implements http.ResponseWriter.
func (w *quotaWriter) WriteHeader(code int) {
	// Informational responses go out before the handler has decided
	// anything; net/http treats 101 as final.
	if code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
		w.apply()
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *quotaWriter) Write(p []byte) (int, error) {
	w.apply()
	return w.ResponseWriter.Write(p)
}

// ReadFrom implements io.ReaderFrom, so that io.Copy (http.ServeContent,
// http.FileServer) keeps the sendfile path of net/http's ResponseWriter.
func (w *quotaWriter) ReadFrom(src io.Reader) (int64, error) {
	w.apply()
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, src)
}

// writerOnly hides every method but Write, so that io.Copy does not call
// ReadFrom again.
type writerOnly struct{ io.Writer }

// Flush implements http.Flusher, for handlers that assert it rather than
// use http.ResponseController.
func (w *quotaWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController calls to flush; it reports
// http.ErrNotSupported when the underlying ResponseWriter cannot flush.
func (w *quotaWriter) FlushError() error {
	w.apply()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker; it reports http.ErrNotSupported when
// the underlying ResponseWriter cannot hijack (HTTP/2, for one).
func (w *quotaWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.done = true
	}
	return conn, rw, err
}

// Unwrap returns the ResponseWriter QuotaHeaders received, for
// http.ResponseController.
func (w *quotaWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setRecorded adds the fields of each recorded decision whose policy has
// no item in h. Recorded names are unique, so an item this loop adds never
// hides a later decision.
func setRecorded(h http.Header, recorded []limitDecision) {
	for _, ld := range recorded {
		if ld.limit.Validate() != nil {
			continue
		}
		name := sfString(policyName(ld.limit.Name))
		if hasItem(h, fieldPolicy, name) || hasItem(h, fieldRateLimit, name) {
			continue
		}
		SetHeaders(h, ld.limit, ld.decision)
	}
}

// The wrapper must keep the optional interfaces handlers rely on.
var (
	_ http.Flusher  = (*quotaWriter)(nil)
	_ http.Hijacker = (*quotaWriter)(nil)
	_ io.ReaderFrom = (*quotaWriter)(nil)
)
