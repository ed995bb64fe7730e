package ratelimithttp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A generated wrapper returns only an error: a denial carries its Decision
// in the *runtime.LimitError, but an admitted call says nothing of the quota
// it left. The request's context, which handlers already pass to the
// wrapper, carries that quota to the response instead, so neither the
// wrapper's signature nor the handler's code has to change.

// LimitDecision is a decision a limiter took for one limit during a
// request, as Recorded reports it.
type LimitDecision struct {
	Limit    runtime.Limit
	Decision runtime.Decision
}

// RecordDecisions returns a runtime.Limiter that asks lim and, when the
// context of the call comes from QuotaHeaders or WithRecorder, records each
// decision lim takes there for Recorded and QuotaHeaders to read. Calls
// whose context has no recorder, and calls that end in an error (no
// decision was taken), record nothing; either way the result is lim's, so
// the returned limiter can stand in for lim everywhere, typically as the
// limiter given to generated constructors:
//
//	limiter := ratelimithttp.RecordDecisions(runtime.NewRedisLimiter(client))
//	codes := notify.NewRateLimitedCodeService(svc, limiter)
//
// It implements runtime.NLimiter and runtime.MultiLimiter by passing the
// call to runtime.AllowN and runtime.AllowAll with lim, so directives with
// a cost and methods with several limits behave exactly as with lim itself:
// a cost above 1 or several limits in one call still need lim to support
// them, and an AllowAll call stays atomic. For AllowAll every limit's
// decision is recorded, including on a denial, where a limit that had room
// reports Allowed false with RetryAfter 0 (see runtime.Decisions).
//
// RecordDecisions(RecordDecisions(lim)) records once. It panics if lim is
// nil, so that a wiring mistake stops the program at start-up.
func RecordDecisions(lim runtime.Limiter) runtime.Limiter {
	switch lim.(type) {
	case nil:
		panic("ratelimithttp: RecordDecisions: nil Limiter; pass e.g. runtime.NewMemoryLimiter()")
	case recordingLimiter:
		return lim
	}
	return recordingLimiter{next: lim}
}

type recordingLimiter struct{ next runtime.Limiter }

// Allow implements runtime.Limiter.
func (l recordingLimiter) Allow(ctx context.Context, lim runtime.Limit, key string) (runtime.Decision, error) {
	d, err := l.next.Allow(ctx, lim, key)
	if err == nil {
		recorderFrom(ctx).record(lim, d)
	}
	return d, err
}

// AllowN implements runtime.NLimiter.
func (l recordingLimiter) AllowN(ctx context.Context, lim runtime.Limit, key string, n int) (runtime.Decision, error) {
	d, err := runtime.AllowN(ctx, l.next, lim, key, n)
	if err == nil {
		recorderFrom(ctx).record(lim, d)
	}
	return d, err
}

// AllowAll implements runtime.MultiLimiter.
func (l recordingLimiter) AllowAll(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	ds, err := runtime.AllowAll(ctx, l.next, reqs...)
	if err == nil && len(ds.Each) == len(reqs) {
		rec := recorderFrom(ctx)
		for i, r := range reqs {
			rec.record(r.Limit, ds.Each[i])
		}
	}
	return ds, err
}

type recorderKey struct{}

// recorder holds the latest decision for each limit name, in the order the
// names were first decided. Keeping one entry per name bounds its size by
// the number of limits, however many calls a long request makes, and it is
// what the RateLimit fields can show: one item per policy.
//
// A handler may call rate-limited methods from several goroutines, so the
// list is guarded by mu. parent is the recorder of an enclosing
// WithRecorder or QuotaHeaders, which sees the same decisions.
type recorder struct {
	parent *recorder
	mu     sync.Mutex
	list   []LimitDecision
}

func recorderFrom(ctx context.Context) *recorder {
	rec, _ := ctx.Value(recorderKey{}).(*recorder)
	return rec
}

// record stores d as the latest decision for l in rec and its parents. A
// nil rec records nothing.
func (rec *recorder) record(l runtime.Limit, d runtime.Decision) {
	for ; rec != nil; rec = rec.parent {
		rec.put(l, d)
	}
}

func (rec *recorder) put(l runtime.Limit, d runtime.Decision) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i := range rec.list {
		if rec.list[i].Limit.Name == l.Name {
			rec.list[i] = LimitDecision{Limit: l, Decision: d}
			return
		}
	}
	rec.list = append(rec.list, LimitDecision{Limit: l, Decision: d})
}

func (rec *recorder) snapshot() []LimitDecision {
	if rec == nil {
		return nil
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]LimitDecision(nil), rec.list...)
}

// WithRecorder returns a context in which limiters made by RecordDecisions
// record their decisions, for Recorded to return. QuotaHeaders does this
// for every request; call WithRecorder to collect the decisions of some
// calls only, or outside net/http. Decisions recorded in the returned
// context are also recorded in any recorder ctx already carries, so a
// handler under QuotaHeaders loses no RateLimit fields by using it.
func WithRecorder(ctx context.Context) context.Context {
	return context.WithValue(ctx, recorderKey{}, &recorder{parent: recorderFrom(ctx)})
}

// Recorded returns the decisions recorded in ctx (see WithRecorder and
// QuotaHeaders) so far: for each limit name, the latest decision, in the
// order the limits were first decided. A method called twice, or for two
// keys under one limit, leaves only its last decision. It returns nil when
// ctx has no recorder or nothing was recorded; it is safe to call while
// other goroutines record.
//
// To advertise them in a handler that does not use QuotaHeaders, pass each
// one to SetHeaders, setting Decision.Allowed first when RetryAfter is 0:
// such a "denial" comes from a call with several limits that another limit
// denied, and this limit still has Decision.Remaining units of room.
func Recorded(ctx context.Context) []LimitDecision {
	return recorderFrom(ctx).snapshot()
}

// QuotaHeaders returns a handler that serves next with a recorder in the
// request's context (see WithRecorder) and, when next writes the response
// header, adds the RateLimit-Policy and RateLimit fields of the decisions
// recorded by then, as SetHeaders writes them: one item per limit, in the
// order of Recorded. With limiters made by RecordDecisions, a successful
// response (or any other) advertises the quota that the calls it made left:
//
//	mux := http.NewServeMux()
//	mux.HandleFunc("POST /codes", sendCode) // calls a generated wrapper
//	srv := &http.Server{Handler: ratelimithttp.QuotaHeaders(mux)}
//
// A policy that already has an item in either field when the header is
// written keeps it: the handler (or WriteError, on a 429) had the last
// word. A limit that had room on a call that another limit denied is
// shown with its room, and t is the time until its quota is full again.
// Decisions taken after the header was written (for example while
// streaming the body) are not shown.
//
// The fields are added at the first of WriteHeader with a final status
// (1xx other than 101 Switching Protocols do not count), Write, ReadFrom
// or Flush, or, if next writes nothing, when it returns, before net/http
// sends its implicit 200. The ResponseWriter next receives implements
// http.Flusher, http.Hijacker and io.ReaderFrom by delegating to the one
// QuotaHeaders received, reporting http.ErrNotSupported through
// http.ResponseController where that one cannot, and Unwrap returns it.
//
// QuotaHeaders panics if next is nil, like Middleware.
func QuotaHeaders(next http.Handler) http.Handler {
	if next == nil {
		panic("ratelimithttp: QuotaHeaders applied to a nil http.Handler")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := WithRecorder(r.Context())
		qw := &quotaWriter{ResponseWriter: w, rec: recorderFrom(ctx)}
		next.ServeHTTP(qw, r.WithContext(ctx))
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

// apply adds the fields once. After a hijack it only touches a header map
// that nobody reads.
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
func setRecorded(h http.Header, recorded []LimitDecision) {
	for _, ld := range recorded {
		if ld.Limit.Validate() != nil {
			continue
		}
		name := sfString(policyName(ld.Limit.Name))
		if hasItem(h, fieldPolicy, name) || hasItem(h, fieldRateLimit, name) {
			continue
		}
		d := ld.Decision
		if !d.Allowed && d.RetryAfter <= 0 {
			// Another limit denied the call; this one had room, and the
			// time until it refills is the honest t, not "retry in 1 s".
			d.Allowed = true
		}
		SetHeaders(h, ld.Limit, d)
	}
}

// hasItem reports whether the list field holds an item named name, an
// sf-string as sfString writes it, whether the field's items came one per
// line (as SetHeaders writes them) or comma-separated in one line.
func hasItem(h http.Header, field, name string) bool {
	for _, v := range h.Values(field) {
		for start := 0; start < len(v); {
			for start < len(v) && (v[start] == ' ' || v[start] == '\t') {
				start++
			}
			end := itemEnd(v, start)
			item := v[start:end]
			if len(item) >= len(name) && item[:len(name)] == name &&
				(len(item) == len(name) || item[len(name)] == ';' || item[len(name)] == ' ' || item[len(name)] == '\t') {
				return true
			}
			start = end + 1
		}
	}
	return false
}

// itemEnd returns the index of the comma that ends the list item starting
// at start, or len(v); commas inside sf-strings do not count.
func itemEnd(v string, start int) int {
	quoted := false
	for i := start; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == ',':
			return i
		}
	}
	return len(v)
}

// The wrapper must keep the optional interfaces handlers rely on.
var (
	_ http.Flusher  = (*quotaWriter)(nil)
	_ http.Hijacker = (*quotaWriter)(nil)
	_ io.ReaderFrom = (*quotaWriter)(nil)
)
