// Package llm is the model client of the tokenbudget example: a Model
// completes prompts, and its per-user token budget is declared on the
// interface and enforced by the generated RateLimitedModel.
package llm

//go:generate go tool ratelimitgen

import (
	"context"
	"errors"
	"strings"
)

// Model completes prompts, as an LLM API does.
type Model interface {
	// Complete answers p. Each user may spend 10,000 tokens per minute.
	// A call reserves p.MaxTokens, the most it may use, before it runs,
	// and counts what it used once it returns: the reservation's unused
	// tokens go back to the budget. A call that fails keeps its
	// reservation, as the model may have worked on it.
	//
	//ratelimit:key=p.User window=1m max=10_000 algo=token-bucket cost=p.MaxTokens settle=resp.Usage.TotalTokens name=Model.Complete
	Complete(ctx context.Context, p Prompt) (*Completion, error)
}

// Prompt asks the model for a completion of at most MaxTokens tokens.
type Prompt struct {
	User      string
	Text      string
	MaxTokens int
}

// Usage is what a completion used, as model APIs report it.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int
}

// Completion is the model's answer.
type Completion struct {
	Text  string
	Usage Usage
}

// ErrInvalidPrompt is a prompt no model can answer.
var ErrInvalidPrompt = errors.New("invalid prompt")

// Echo is a stand-in for a real model: it answers with the prompt's words
// in reverse order, one token per word, and reports the usage as a model
// API would.
type Echo struct{}

// Complete implements Model.
func (Echo) Complete(_ context.Context, p Prompt) (*Completion, error) {
	words := strings.Fields(p.Text)
	if len(words) == 0 || p.MaxTokens < 1 {
		return nil, ErrInvalidPrompt
	}
	answer := make([]string, 0, len(words))
	for i := len(words) - 1; i >= 0 && len(answer) < p.MaxTokens; i-- {
		answer = append(answer, words[i])
	}
	return &Completion{
		Text:  strings.Join(answer, " "),
		Usage: Usage{PromptTokens: len(words), CompletionTokens: len(answer), TotalTokens: len(words) + len(answer)},
	}, nil
}
