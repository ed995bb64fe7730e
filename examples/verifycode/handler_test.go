package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/examples/verifycode/notify"
	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// testAPI is the handler wired as initApp wires it, around any limiter
// (recording its decisions, as newLimiter does) and mailer, with its mails
// and error log captured.
type testAPI struct {
	h     http.Handler
	box   *outbox
	mails *bytes.Buffer
	logs  *bytes.Buffer
}

func newTestAPI(t *testing.T, limiter runtime.Limiter, mailer notify.Mailer) *testAPI {
	t.Helper()
	api := &testAPI{mails: &bytes.Buffer{}, logs: &bytes.Buffer{}}
	api.box = newOutbox(config{mailLog: api.mails})
	if mailer == nil {
		mailer = api.box
	}
	log := slog.New(slog.NewTextHandler(api.logs, nil))
	api.h = newHandler(newCodeService(notify.NewService(mailer), ratelimithttp.RecordDecisions(limiter)), log)
	return api
}

// tickingLimiter decides on a clock that moves 1ms on each reading, so
// that the t of the RateLimit fields and Retry-After are exact whatever
// the machine's speed.
func tickingLimiter() runtime.Limiter {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	return memlimit.New(memlimit.WithClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}))
}

func (api *testAPI) post(t *testing.T, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	api.h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	// Fields set after the header was written would show in w.Header()
	// but never reach a client; Result has what was sent.
	for _, name := range []string{"RateLimit-Policy", "RateLimit", "Retry-After"} {
		require.Equal(t, w.Header().Values(name), w.Result().Header.Values(name), "%s was set too late", name)
	}
	return w
}

func problemOf(t *testing.T, w *httptest.ResponseRecorder) problem {
	t.Helper()
	require.Equal(t, contentTypeProblem, w.Header().Get("Content-Type"), "body: %s", w.Body)
	var p problem
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p), "body: %s", w.Body)
	assert.Equal(t, w.Code, p.Status)
	return p
}

func TestSendCodeLimitedPerAddress(t *testing.T) {
	api := newTestAPI(t, tickingLimiter(), nil)
	const policy = `"CodeService.SendCode";q=3;w=60`

	for i, remaining := range []string{"2", "1", "0"} {
		w := api.post(t, "/codes", `{"email":"alice@example.com"}`)
		require.Equal(t, http.StatusOK, w.Code, "send %d: %s", i+1, w.Body)
		assert.JSONEq(t, `{"status":"code sent"}`, w.Body.String())
		assert.Equal(t, []string{policy}, w.Header().Values("RateLimit-Policy"))
		assert.Equal(t, []string{`"CodeService.SendCode";r=` + remaining + `;t=60`}, w.Header().Values("RateLimit"))
		assert.Empty(t, w.Header().Get("Retry-After"))
	}

	// The same mailbox, spelt differently, is denied.
	w := api.post(t, "/codes", `{"email":" Alice@Example.COM "}`)
	require.Equal(t, http.StatusTooManyRequests, w.Code, "body: %s", w.Body)
	assert.Equal(t, "60", w.Header().Get("Retry-After"))
	// One item each: the denial's, not a second one for the same policy.
	assert.Equal(t, []string{policy}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"CodeService.SendCode";r=0;t=60`}, w.Header().Values("RateLimit"))
	p := problemOf(t, w)
	assert.Equal(t, "https://iana.org/assignments/http-problem-types#quota-exceeded", p.Type)
	assert.Equal(t, []string{"CodeService.SendCode"}, p.ViolatedPolicies)
	assert.Equal(t, "Too many requests for CodeService.SendCode: at most 3 per 1m0s. Retry in 60 s.", p.Detail)
	assert.NotContains(t, strings.ToLower(w.Body.String()), "alice", "the key is personal data")
	assert.Equal(t, 3, strings.Count(api.mails.String(), "mail to alice@example.com:"), "a denied call sends no mail")

	// Another address has its own quota.
	w = api.post(t, "/codes", `{"email":"bob@example.com"}`)
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
	assert.Equal(t, `"CodeService.SendCode";r=2;t=60`, w.Header().Get("RateLimit"))
}

func TestVerifyCodeLimitsAttempts(t *testing.T) {
	api := newTestAPI(t, tickingLimiter(), nil)
	require.Equal(t, http.StatusOK, api.post(t, "/codes", `{"email":"alice@example.com"}`).Code)
	code, ok := api.box.lastCode("alice@example.com")
	require.True(t, ok)
	verify := func(code string) *httptest.ResponseRecorder {
		return api.post(t, "/codes/verify", `{"email":"alice@example.com","code":"`+code+`"}`)
	}

	for _, remaining := range []string{"4", "3", "2", "1", "0"} {
		w := verify(wrong(code))
		require.Equal(t, http.StatusBadRequest, w.Code, "body: %s", w.Body)
		assert.Equal(t, "the code is wrong or has expired", problemOf(t, w).Detail)
		// Wrong guesses advertise how many attempts are left.
		assert.Equal(t, `"CodeService.VerifyCode";q=5;w=600`, w.Header().Get("RateLimit-Policy"))
		assert.Equal(t, `"CodeService.VerifyCode";r=`+remaining+`;t=600`, w.Header().Get("RateLimit"))
	}
	w := verify(code)
	require.Equal(t, http.StatusTooManyRequests, w.Code, "even the right code is refused: body: %s", w.Body)
	assert.Equal(t, "600", w.Header().Get("Retry-After"))
	assert.Equal(t, []string{"CodeService.VerifyCode"}, problemOf(t, w).ViolatedPolicies)
}

func TestVerifyCodeAcceptsTheRightCodeOnce(t *testing.T) {
	api := newTestAPI(t, tickingLimiter(), nil)
	require.Equal(t, http.StatusOK, api.post(t, "/codes", `{"email":"bob@example.com"}`).Code)
	code, _ := api.box.lastCode("bob@example.com")

	w := api.post(t, "/codes/verify", `{"email":"Bob@Example.com","code":"`+code+`"}`)
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
	assert.JSONEq(t, `{"status":"code verified"}`, w.Body.String())
	assert.Equal(t, `"CodeService.VerifyCode";r=4;t=600`, w.Header().Get("RateLimit"))

	w = api.post(t, "/codes/verify", `{"email":"bob@example.com","code":"`+code+`"}`)
	assert.Equal(t, http.StatusBadRequest, w.Code, "a code is single-use: body: %s", w.Body)
	// The right code gave its unit back: the used one, wrong now, is the
	// first attempt counted.
	assert.Equal(t, `"CodeService.VerifyCode";r=4;t=600`, w.Header().Get("RateLimit"))
}

// Only wrong codes count: a customer who checks right codes keeps every
// attempt (3 codes: SendCode's limit for a minute).
func TestVerifyCodeCountsWrongCodesOnly(t *testing.T) {
	api := newTestAPI(t, tickingLimiter(), nil)
	for range 3 {
		require.Equal(t, http.StatusOK, api.post(t, "/codes", `{"email":"carol@example.com"}`).Code)
		code, _ := api.box.lastCode("carol@example.com")
		w := api.post(t, "/codes/verify", `{"email":"carol@example.com","code":"`+code+`"}`)
		require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
		require.Equal(t, `"CodeService.VerifyCode";r=4;t=600`, w.Header().Get("RateLimit"), "each right code is given back")
	}
}

// Requests that no retry can fix are answered 400 before the limiter is
// asked, so they spend no one's quota.
func TestInvalidRequestsSpendNoQuota(t *testing.T) {
	api := newTestAPI(t, tickingLimiter(), nil)
	for _, tc := range []struct{ path, body, detail string }{
		{"/codes", `not json`, "The body must be a JSON object"},
		{"/codes", `{"email":""}`, "the e-mail address is missing"},
		{"/codes", `{"email":"Alice <alice@example.com>"}`, "is not an e-mail address"},
		{"/codes/verify", `{"email":"alice@example.com"}`, "the code is missing"},
	} {
		for range 4 {
			w := api.post(t, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, w.Code, "%s %s: %s", tc.path, tc.body, w.Body)
			assert.Contains(t, problemOf(t, w).Detail, tc.detail)
			assert.Empty(t, w.Header().Values("RateLimit"), "%s %s", tc.path, tc.body)
		}
	}
	for range 3 {
		require.Equal(t, http.StatusOK, api.post(t, "/codes", `{"email":"alice@example.com"}`).Code)
	}

	w := httptest.NewRecorder()
	api.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/codes", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
}

// With Redis down and FailClosed, the limiter cannot decide: the answer is
// 503, never 429, the service is not called, and the error is logged.
func TestLimiterUnavailableIs503(t *testing.T) {
	s := redistest.StartServer(t)
	limiter := redislimit.New(s.Client(t), redislimit.WithFailurePolicy(redislimit.FailClosed))
	api := newTestAPI(t, limiter, nil)
	require.Equal(t, http.StatusOK, api.post(t, "/codes", `{"email":"alice@example.com"}`).Code, "Redis is up")
	api.mails.Reset()

	s.Stop(t)
	for _, path := range []string{"/codes", "/codes/verify"} {
		w := api.post(t, path, `{"email":"alice@example.com","code":"123456"}`)
		require.Equal(t, http.StatusServiceUnavailable, w.Code, "%s: %s", path, w.Body)
		assert.Empty(t, w.Header().Get("Retry-After"))
		assert.Empty(t, w.Header().Values("RateLimit"))
		assert.Contains(t, problemOf(t, w).Detail, "could not decide")
	}
	assert.Empty(t, api.mails.String(), "no mail without a decision")
	assert.Equal(t, 2, strings.Count(api.logs.String(), "rate limiter unavailable"), "logs: %s", api.logs)
	assert.NotContains(t, api.logs.String(), "alice", "logs must not hold the key")
}

type brokenMailer struct{}

func (brokenMailer) MailCode(context.Context, string, string) error {
	return errors.New("smtp: 451 try again later")
}

// A failure of the service itself is a 500 that still advertises the
// quota the admitted call used.
func TestServiceFailureIs500(t *testing.T) {
	api := newTestAPI(t, tickingLimiter(), brokenMailer{})
	w := api.post(t, "/codes", `{"email":"alice@example.com"}`)
	require.Equal(t, http.StatusInternalServerError, w.Code, "body: %s", w.Body)
	assert.NotContains(t, w.Body.String(), "smtp", "internal errors stay in the log")
	assert.Equal(t, `"CodeService.SendCode";r=2;t=60`, w.Header().Get("RateLimit"))
	assert.Contains(t, api.logs.String(), "smtp: 451 try again later")
}
