package ratelimithttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

func writeErr(t *testing.T, method string, err error) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	w := httptest.NewRecorder()
	handled := ratelimithttp.WriteError(w, httptest.NewRequest(method, "/send-code", nil), err)
	return w, handled
}

func decodeBody(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	require.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
	var m map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m), "body: %s", w.Body)
	return m
}

func TestWriteErrorLimitError(t *testing.T) {
	le := &runtime.LimitError{Limit: sendCode, Decision: runtime.Decision{RetryAfter: 41200 * time.Millisecond, ResetAfter: 59 * time.Second}}
	w, handled := writeErr(t, http.MethodPost, le)

	require.True(t, handled)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "42", w.Header().Get("Retry-After"))
	assert.Equal(t, []string{`"Notifier.SendCode";q=3;w=60`}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"Notifier.SendCode";r=0;t=42`}, w.Header().Values("RateLimit"))
	assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
	assert.Equal(t, map[string]any{
		"type":                "https://iana.org/assignments/http-problem-types#quota-exceeded",
		"title":               "Request cannot be satisfied as assigned quota has been exceeded",
		"status":              float64(429),
		"detail":              "Too many requests for Notifier.SendCode: at most 3 per 1m0s. Retry in 42 s.",
		"violated-policies":   []any{"Notifier.SendCode"},
		"retry_after_seconds": float64(42),
		"quota":               float64(3),
		"window_seconds":      float64(60),
	}, decodeBody(t, w))

}

func TestWriteErrorRetryAfterRoundsUp(t *testing.T) {
	cases := []struct {
		retry time.Duration
		want  string
	}{
		{1200 * time.Millisecond, "2"},
		{time.Millisecond, "1"},
		{time.Nanosecond, "1"},
		{time.Second, "1"},
		{2 * time.Second, "2"},
		{2*time.Second + time.Nanosecond, "3"},
		{59999 * time.Millisecond, "60"},
		{0, "1"},
		{-time.Second, "1"},
		{24 * time.Hour, "86400"},
	}
	for _, tc := range cases {
		t.Run(tc.retry.String(), func(t *testing.T) {
			w, _ := writeErr(t, http.MethodGet, &runtime.LimitError{Limit: sendCode, Decision: runtime.Decision{RetryAfter: tc.retry}})
			assert.Equal(t, tc.want, w.Header().Get("Retry-After"))
			assert.Equal(t, `"Notifier.SendCode";r=0;t=`+tc.want, w.Header().Get("RateLimit"),
				"t must equal Retry-After so that Retry-After is not before the end of the effective window")
			assert.Equal(t, tc.want, fmt.Sprint(decodeBody(t, w)["retry_after_seconds"]))
		})
	}
}

func TestWriteErrorWrappedLimitError(t *testing.T) {
	le := &runtime.LimitError{Limit: sendCode, Decision: runtime.Decision{RetryAfter: 5 * time.Second}}
	err := fmt.Errorf("handler: %w", fmt.Errorf("service: %w", le))
	w, handled := writeErr(t, http.MethodPost, err)
	require.True(t, handled)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "5", w.Header().Get("Retry-After"))
	assert.Equal(t, `"Notifier.SendCode";r=0;t=5`, w.Header().Get("RateLimit"))

	w, handled = writeErr(t, http.MethodPost, errors.Join(errors.New("other"), le))
	require.True(t, handled)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
}

func TestWriteErrorReportsRemainingOfCostlyDenial(t *testing.T) {
	// A call of cost 2 denied with 1 unit left: the quota left is 1, not 0.
	le := &runtime.LimitError{Limit: sendCode, Decision: runtime.Decision{Remaining: 1, RetryAfter: 3 * time.Second}}
	w, _ := writeErr(t, http.MethodPost, le)
	assert.Equal(t, `"Notifier.SendCode";r=1;t=3`, w.Header().Get("RateLimit"))
}

func TestWriteErrorBareLimited(t *testing.T) {
	for name, err := range map[string]error{
		"ErrLimited":         fmt.Errorf("quota: %w", runtime.ErrLimited),
		"nil *LimitError":    fmt.Errorf("odd: %w", (*runtime.LimitError)(nil)),
		"LimitError no name": &runtime.LimitError{Decision: runtime.Decision{RetryAfter: 1500 * time.Millisecond}},
	} {
		t.Run(name, func(t *testing.T) {
			w, handled := writeErr(t, http.MethodPost, err)
			require.True(t, handled)
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
			assert.Empty(t, w.Header().Values("RateLimit"))
			assert.Empty(t, w.Header().Values("RateLimit-Policy"))
			body := decodeBody(t, w)
			assert.Equal(t, "https://iana.org/assignments/http-problem-types#quota-exceeded", body["type"])
			assert.NotContains(t, body, "violated-policies")
			if name == "LimitError no name" {
				assert.Equal(t, "2", w.Header().Get("Retry-After"))
				assert.Equal(t, "Too many requests. Retry in 2 s.", body["detail"])
			} else {
				assert.Empty(t, w.Header().Get("Retry-After"), "no wait is known, so none is claimed")
				assert.Equal(t, "Too many requests. Retry later.", body["detail"])
			}
		})
	}
}

func TestWriteErrorUnavailable(t *testing.T) {
	for name, err := range map[string]error{
		"sentinel": runtime.ErrUnavailable,
		"wrapped":  fmt.Errorf("send code: %w", fmt.Errorf("redis 10.0.0.3:6379: dial timeout: %w", runtime.ErrUnavailable)),
	} {
		t.Run(name, func(t *testing.T) {
			w, handled := writeErr(t, http.MethodPost, err)
			require.True(t, handled)
			assert.Equal(t, http.StatusServiceUnavailable, w.Code, "a limiter failure is never a 429")
			assert.Empty(t, w.Header().Get("Retry-After"))
			assert.Empty(t, w.Header().Values("RateLimit"))
			body := decodeBody(t, w)
			assert.Equal(t, map[string]any{
				"type":   "about:blank",
				"title":  "Service Unavailable",
				"status": float64(503),
				"detail": "The rate limiter could not decide whether to accept this request, so it was not processed. Please retry later.",
			}, body)
			assert.NotContains(t, w.Body.String(), "10.0.0.3", "infrastructure details stay on the server")
		})
	}
}

func TestWriteErrorLeavesOtherErrorsToCaller(t *testing.T) {
	for name, err := range map[string]error{
		"nil":              nil,
		"application":      errors.New("smtp: mailbox unavailable"),
		"invalid cost":     fmt.Errorf("x: %w", runtime.ErrInvalidCost),
		"context canceled": context.Canceled,
	} {
		t.Run(name, func(t *testing.T) {
			w, handled := writeErr(t, http.MethodPost, err)
			assert.False(t, handled)
			assert.False(t, w.Flushed)
			assert.Empty(t, w.Header(), "nothing may be written for an error the caller answers")
			assert.Zero(t, w.Body.Len())
			assert.Equal(t, http.StatusOK, w.Code, "recorder default: WriteHeader was not called")
		})
	}
}

func TestWriteErrorHeadHasNoBody(t *testing.T) {
	w, handled := writeErr(t, http.MethodHead, &runtime.LimitError{Limit: sendCode, Decision: runtime.Decision{RetryAfter: time.Second}})
	require.True(t, handled)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Zero(t, w.Body.Len())
}

func TestWriteErrorNilRequest(t *testing.T) {
	w := httptest.NewRecorder()
	require.True(t, ratelimithttp.WriteError(w, nil, runtime.ErrUnavailable))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.NotZero(t, w.Body.Len())
}
