package main

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ratelimitgen/ratelimitgen/examples/tokenbudget/llm"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// completeRequest is the body of POST /complete. The user comes from the
// X-User header here; a real service takes it from its authentication.
type completeRequest struct {
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`
}

type completeResponse struct {
	Text        string `json:"text"`
	TotalTokens int    `json:"total_tokens"`
}

// completeHandler serves POST /complete through model, which is the
// rate-limited one: a user whose budget is spent gets 429 with
// Retry-After, and the RateLimit fields say what is left.
func completeHandler(model llm.Model) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req completeRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, "the body must be JSON: {\"prompt\": ..., \"max_tokens\": ...}", http.StatusBadRequest)
			return
		}
		user := r.Header.Get("X-User")
		if user == "" {
			http.Error(w, "the X-User header is required", http.StatusUnauthorized)
			return
		}
		c, err := model.Complete(r.Context(), llm.Prompt{User: user, Text: req.Prompt, MaxTokens: req.MaxTokens})
		switch {
		case ratelimithttp.WriteError(w, r, err):
			// 429 with Retry-After when the budget is spent, or 503
			// when the limiter could not decide: answered.
		case errors.Is(err, runtime.ErrInvalidCost):
			http.Error(w, "max_tokens is above the budget of a minute", http.StatusBadRequest)
		case errors.Is(err, llm.ErrInvalidPrompt):
			http.Error(w, err.Error(), http.StatusBadRequest)
		case err != nil:
			http.Error(w, "the model failed", http.StatusBadGateway)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(completeResponse{Text: c.Text, TotalTokens: c.Usage.TotalTokens})
		}
	})
}
