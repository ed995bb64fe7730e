package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// complete posts a prompt of words words for user, reserving maxTokens.
func complete(t *testing.T, h http.Handler, user string, words, maxTokens int) *httptest.ResponseRecorder {
	t.Helper()
	body, err := json.Marshal(completeRequest{Prompt: strings.Repeat("w ", words), MaxTokens: maxTokens})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "/complete", strings.NewReader(string(body)))
	r.Header.Set("X-User", user)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestBudgetCountsTokensUsed: calls reserve max_tokens but count the
// tokens they used, so a user who reserves generously is not denied for
// it; once what was used leaves too little for a reservation, the answer
// is 429 with Retry-After. The clock stands still, so nothing refills.
func TestBudgetCountsTokensUsed(t *testing.T) {
	clock := testclock.New()
	h := ratelimithttp.QuotaHeaders(newMux(ratelimithttp.RecordDecisions(memlimit.New(memlimit.WithClock(clock.Now)))))

	// 20 calls reserving 4,000 each: 80,000 reserved in all, far beyond
	// the budget of 10,000; 20 × 6 tokens used.
	for n := range 20 {
		w := complete(t, h, "ann", 3, 4000)
		require.Equal(t, http.StatusOK, w.Code, "call %d: %s", n+1, w.Body)
		var resp completeResponse
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
		require.Equal(t, 6, resp.TotalTokens)
	}
	// 6,000 more used of 9,000 reserved: 10,000 - 120 - 6,000 = 3,880 left.
	w := complete(t, h, "ann", 3000, 9000)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	w = complete(t, h, "ann", 3, 3881)
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	require.NotEmpty(t, w.Header().Get("Retry-After"))
	require.Contains(t, w.Header().Get("RateLimit"), `"Model.Complete";r=3880`)
	w = complete(t, h, "ann", 3, 3880)
	require.Equal(t, http.StatusOK, w.Code, "a reservation of what is left: %s", w.Body)

	// Another user has the whole budget; a reservation above it is the
	// client's mistake.
	require.Equal(t, http.StatusOK, complete(t, h, "bob", 3, 10_000).Code)
	require.Equal(t, http.StatusBadRequest, complete(t, h, "bob", 3, 10_001).Code)
}
