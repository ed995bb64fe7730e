package ratelimithttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

var sendCodeLimit = runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}

// notifier does what a ratelimitgen wrapper does: it asks its limiter with
// the caller's context and returns only an error.
type notifier struct{ lim runtime.Limiter }

func (n notifier) SendCode(ctx context.Context, email string) error {
	return runtime.Enforce(ctx, n.lim, runtime.Request{Limit: sendCodeLimit, Key: email})
}

// sendCodeHandler is the handler a user writes: it knows nothing of
// recording.
func sendCodeHandler(n notifier) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := n.SendCode(r.Context(), r.URL.Query().Get("email")); err != nil {
			if ratelimithttp.WriteError(w, r, err) {
				return
			}
			http.Error(w, "could not send the code", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "sent")
	})
}

// sent returns the response header as it was when the header was written,
// not as the handler left the map afterwards.
func sent(t *testing.T, h http.Handler, r *http.Request) *http.Response {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func sendCodeRequest(email string) *http.Request {
	return httptest.NewRequest(http.MethodPost, "/codes?email="+email, nil)
}

// decide asks lim for one limit of cost 1, as a handler step.
func decide(ctx context.Context, lim runtime.Limiter, l runtime.Limit, key string) (runtime.Decision, error) {
	ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: key})
	return ds.Decision(), err
}

func TestQuotaHeadersAdvertiseAdmittedCalls(t *testing.T) {
	lim := newCountLimiter(42*time.Second, 60*time.Second)
	h := ratelimithttp.QuotaHeaders(sendCodeHandler(notifier{ratelimithttp.RecordDecisions(lim)}))

	for _, remaining := range []string{"2", "1", "0"} {
		resp := sent(t, h, sendCodeRequest("alice"))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, []string{`"Notifier.SendCode";q=3;w=60`}, resp.Header.Values("RateLimit-Policy"))
		assert.Equal(t, []string{`"Notifier.SendCode";r=` + remaining + `;t=60`}, resp.Header.Values("RateLimit"))
		assert.Empty(t, resp.Header.Get("Retry-After"))
	}

	// The denial is WriteError's: its t is Retry-After, and the recorded
	// denial adds no second item.
	resp := sent(t, h, sendCodeRequest("alice"))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "42", resp.Header.Get("Retry-After"))
	assert.Equal(t, []string{`"Notifier.SendCode";q=3;w=60`}, resp.Header.Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"Notifier.SendCode";r=0;t=42`}, resp.Header.Values("RateLimit"))

	resp = sent(t, h, sendCodeRequest("bob"))
	assert.Equal(t, []string{`"Notifier.SendCode";r=2;t=60`}, resp.Header.Values("RateLimit"))
}

func TestQuotaHeadersWithoutRecordedDecision(t *testing.T) {
	lim := newCountLimiter(42*time.Second, 60*time.Second)
	recording := ratelimithttp.RecordDecisions(lim)
	for name, handler := range map[string]http.Handler{
		"no limiter asked": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "ok")
		}),
		"limiter not recording": sendCodeHandler(notifier{lim}),
		"context not the request's": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = notifier{recording}.SendCode(context.Background(), "carol")
			_, _ = io.WriteString(w, "ok")
		}),
	} {
		t.Run(name, func(t *testing.T) {
			resp := sent(t, ratelimithttp.QuotaHeaders(handler), sendCodeRequest("dave"))
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Empty(t, resp.Header.Values("RateLimit"))
			assert.Empty(t, resp.Header.Values("RateLimit-Policy"))
		})
	}

	// An error is not a decision: the 503 advertises no quota.
	lim.err = fmt.Errorf("redis down: %w", runtime.ErrUnavailable)
	resp := sent(t, ratelimithttp.QuotaHeaders(sendCodeHandler(notifier{recording})), sendCodeRequest("erin"))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Empty(t, resp.Header.Values("RateLimit"))
	assert.Empty(t, resp.Header.Values("RateLimit-Policy"))
}

// A policy the handler already reported keeps the handler's item, even in
// a comma-separated line; a name that merely contains the policy's name
// inside its quotes does not count.
func TestQuotaHeadersKeepTheHandlersItems(t *testing.T) {
	lim := ratelimithttp.RecordDecisions(newCountLimiter(42*time.Second, 60*time.Second))
	other := runtime.Limit{Name: "Other", Window: time.Hour, Max: 10}
	h := ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, notifier{lim}.SendCode(r.Context(), "alice"))
		_, err := decide(r.Context(), lim, other, "alice")
		require.NoError(t, err)
		w.Header().Set("RateLimit", `"a";r=1, "Notifier.SendCode";r=9`)
		w.Header().Set("RateLimit-Policy", `"x,\"Other";q=1`)
		w.WriteHeader(http.StatusAccepted)
	}))
	resp := sent(t, h, sendCodeRequest("alice"))
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, []string{`"a";r=1, "Notifier.SendCode";r=9`, `"Other";r=9;t=60`}, resp.Header.Values("RateLimit"))
	assert.Equal(t, []string{`"x,\"Other";q=1`, `"Other";q=10;w=3600`}, resp.Header.Values("RateLimit-Policy"))
}

func newManualLimiter() (*manualClock, *memlimit.Limiter) {
	clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return clock, memlimit.New(memlimit.WithClock(clock.Now))
}

// A call with several limits reports each of them; when one denies, the
// others show the room they kept, not a wait.
func TestQuotaHeadersReportEveryLimitOfAMultiLimitCall(t *testing.T) {
	clock, mem := newManualLimiter()
	lim := ratelimithttp.RecordDecisions(mem)
	perMinute := runtime.Limit{Name: "perMinute", Window: time.Minute, Max: 5}
	perHour := runtime.Limit{Name: "perHour", Window: time.Hour, Max: 1}
	h := ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := runtime.Enforce(r.Context(), lim, runtime.Request{Limit: perMinute, Key: "k"}, runtime.Request{Limit: perHour, Key: "k"})
		if ratelimithttp.WriteError(w, r, err) {
			return
		}
		require.NoError(t, err)
		_, _ = io.WriteString(w, "ok")
	}))

	resp := sent(t, h, sendCodeRequest("k"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{`"perMinute";q=5;w=60`, `"perHour";q=1;w=3600`}, resp.Header.Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"perMinute";r=4;t=60`, `"perHour";r=0;t=3600`}, resp.Header.Values("RateLimit"))

	clock.Advance(10 * time.Second)
	resp = sent(t, h, sendCodeRequest("k"))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "3590", resp.Header.Get("Retry-After"))
	assert.Equal(t, []string{`"perHour";q=1;w=3600`, `"perMinute";q=5;w=60`}, resp.Header.Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"perHour";r=0;t=3590`, `"perMinute";r=4;t=50`}, resp.Header.Values("RateLimit"))
}

// A method called twice, or for two keys under one limit, leaves only its
// latest decision, in the place where the limit was first decided.
func TestQuotaHeadersShowTheLatestDecisionPerLimit(t *testing.T) {
	lim := ratelimithttp.RecordDecisions(newCountLimiter(42*time.Second, time.Minute))
	h := ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range sendCodeLimit.Max + 1 {
			_, err := decide(r.Context(), lim, sendCodeLimit, "k")
			require.NoError(t, err)
		}
		_, err := decide(r.Context(), lim, login, "k")
		require.NoError(t, err)
		_, err = decide(r.Context(), lim, sendCodeLimit, "other key")
		require.NoError(t, err)
		w.WriteHeader(http.StatusNoContent)
	}))
	resp := sent(t, h, sendCodeRequest("k"))
	assert.Equal(t, []string{`"Notifier.SendCode";r=2;t=60`, `"api.login";r=2;t=60`}, resp.Header.Values("RateLimit"))
	assert.Equal(t, []string{`"Notifier.SendCode";q=3;w=60`, `"api.login";q=3;w=60`}, resp.Header.Values("RateLimit-Policy"))
}

// QuotaHeaders inside QuotaHeaders (a global one and a route's own) adds
// each item once, whichever context the limiter was asked with.
func TestQuotaHeadersNested(t *testing.T) {
	lim := ratelimithttp.RecordDecisions(newCountLimiter(42*time.Second, time.Minute))
	h := ratelimithttp.QuotaHeaders(ratelimithttp.QuotaHeaders(sendCodeHandler(notifier{lim})))
	resp := sent(t, h, sendCodeRequest("k"))
	assert.Equal(t, []string{`"Notifier.SendCode";r=2;t=60`}, resp.Header.Values("RateLimit"))
	assert.Equal(t, []string{`"Notifier.SendCode";q=3;w=60`}, resp.Header.Values("RateLimit-Policy"))
}

// One request's handler may call limited methods from several goroutines;
// run with -race.
func TestQuotaHeadersRecordConcurrentCalls(t *testing.T) {
	_, mem := newManualLimiter()
	lim := ratelimithttp.RecordDecisions(mem)
	const workers, calls = 8, 50
	shared := runtime.Limit{Name: "shared", Window: time.Minute, Max: workers * calls}
	h := ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				own := runtime.Limit{Name: fmt.Sprintf("worker%d", i), Window: time.Minute, Max: 1000}
				for range calls {
					_, _ = decide(r.Context(), lim, own, "k")
					_, _ = decide(r.Context(), lim, shared, "k")
				}
			})
		}
		wg.Wait()
		_, _ = io.WriteString(w, "ok")
	}))
	resp := sent(t, h, sendCodeRequest("k"))
	items := resp.Header.Values("RateLimit")
	require.Len(t, items, workers+1, "items: %q", items)
	// t is left to the runtime: a frozen clock gives it no exact value.
	for i := range workers {
		item := items[itemIndex(t, items, fmt.Sprintf(`"worker%d";`, i))]
		assert.Regexp(t, fmt.Sprintf(`^"worker%d";r=950;t=\d+$`, i), item)
	}
	// Goroutines record in any order, so the shared limit's latest
	// decision is one of them; its count is exact all the same.
	assert.Regexp(t, `^"shared";r=\d+;t=\d+$`, items[itemIndex(t, items, `"shared";`)])
	d, err := mem.Allow(context.Background(), shared, "k")
	require.NoError(t, err)
	assert.False(t, d.Allowed, "every shared call was counted")
}

// itemIndex returns the index of the item that starts with prefix; it
// fails the test when there is none.
func itemIndex(t *testing.T, items []string, prefix string) int {
	t.Helper()
	for i, v := range items {
		if strings.HasPrefix(v, prefix) {
			return i
		}
	}
	require.Failf(t, "item missing", "no item starts with %s in %q", prefix, items)
	return -1
}

// recordOne is a handler step that takes one decision. It asserts rather
// than requires, because it also runs on a server's goroutines.
func recordOne(t *testing.T, lim runtime.Limiter, r *http.Request) {
	t.Helper()
	_, err := decide(r.Context(), lim, sendCodeLimit, "k")
	assert.NoError(t, err)
}

func TestQuotaHeadersKeepTheWritersAbilities(t *testing.T) {
	t.Run("Flush", func(t *testing.T) {
		lim := ratelimithttp.RecordDecisions(newCountLimiter(time.Second, time.Minute))
		w := httptest.NewRecorder()
		ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			recordOne(t, lim, r)
			w.(http.Flusher).Flush()
			recordOne(t, lim, r) // too late for the header
			require.NoError(t, http.NewResponseController(w).Flush())
		})).ServeHTTP(w, sendCodeRequest("k"))
		assert.True(t, w.Flushed)
		assert.Equal(t, []string{`"Notifier.SendCode";r=2;t=60`}, w.Result().Header.Values("RateLimit"))
	})
	t.Run("FlushUnsupported", func(t *testing.T) {
		var got error
		ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = http.NewResponseController(w).Flush()
		})).ServeHTTP(plainWriter{httptest.NewRecorder()}, sendCodeRequest("k"))
		assert.ErrorIs(t, got, http.ErrNotSupported)
	})
	t.Run("Unwrap", func(t *testing.T) {
		outer := httptest.NewRecorder()
		var inner http.ResponseWriter
		ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner = w.(interface{ Unwrap() http.ResponseWriter }).Unwrap()
		})).ServeHTTP(outer, sendCodeRequest("k"))
		assert.Same(t, outer, inner)
	})
	t.Run("ReadFrom", func(t *testing.T) {
		lim := ratelimithttp.RecordDecisions(newCountLimiter(time.Second, time.Minute))
		w := httptest.NewRecorder()
		ratelimithttp.QuotaHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			recordOne(t, lim, r)
			n, err := w.(io.ReaderFrom).ReadFrom(strings.NewReader("body"))
			assert.NoError(t, err)
			assert.EqualValues(t, 4, n)
		})).ServeHTTP(w, sendCodeRequest("k"))
		assert.Equal(t, "body", w.Body.String())
		assert.Equal(t, []string{`"Notifier.SendCode";r=2;t=60`}, w.Result().Header.Values("RateLimit"))
	})
}

// plainWriter is a ResponseWriter with no optional interfaces.
type plainWriter struct{ w *httptest.ResponseRecorder }

func (p plainWriter) Header() http.Header         { return p.w.Header() }
func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p plainWriter) WriteHeader(code int)        { p.w.WriteHeader(code) }

// Behaviour that only net/http's own ResponseWriter shows: the implicit
// 200 of a handler that writes nothing, informational responses, the
// sendfile path of ReadFrom, and hijacking.
func TestQuotaHeadersOnARealServer(t *testing.T) {
	lim := ratelimithttp.RecordDecisions(newCountLimiter(time.Second, time.Minute))
	mux := http.NewServeMux()
	mux.HandleFunc("/silent", func(w http.ResponseWriter, r *http.Request) {
		recordOne(t, lim, r)
	})
	mux.HandleFunc("/early-hints", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		recordOne(t, lim, r)
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/copy", func(w http.ResponseWriter, r *http.Request) {
		recordOne(t, lim, r)
		_, _ = io.Copy(w, strings.NewReader("copied"))
	})
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, r *http.Request) {
		recordOne(t, lim, r)
		conn, rw, err := w.(http.Hijacker).Hijack()
		if !assert.NoError(t, err) {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
		_ = rw.Flush()
	})
	srv := httptest.NewServer(ratelimithttp.QuotaHeaders(mux))
	defer srv.Close()

	get := func(path string) (*http.Response, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(body)
	}
	for _, tc := range []struct {
		path, remaining, body string
	}{{"/silent", "2", ""}, {"/early-hints", "1", ""}, {"/copy", "0", "copied"}} {
		resp, body := get(tc.path)
		assert.Equal(t, http.StatusOK, resp.StatusCode, tc.path)
		assert.Equal(t, tc.body, body, tc.path)
		assert.Equal(t, []string{`"Notifier.SendCode";r=` + tc.remaining + `;t=60`}, resp.Header.Values("RateLimit"), tc.path)
	}
	resp, _ := get("/hijack")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Empty(t, resp.Header.Values("RateLimit"), "a hijacked connection carries what the handler wrote")
}

func TestQuotaHeadersRefusesNil(t *testing.T) {
	assert.PanicsWithValue(t, "ratelimithttp: QuotaHeaders applied to a nil http.Handler",
		func() { ratelimithttp.QuotaHeaders(nil) })
}
