// Package outcome counts calls by what they did, with refund= and settle=.
package outcome

import (
	"context"
	"errors"
)

// ErrWrongPassword is a failed login.
var ErrWrongPassword = errors.New("wrong password")

// Session is a logged-in session.
type Session struct{ ID string }

// Usage is what a completion used.
type Usage struct{ TotalTokens int }

// Completion is a model's answer.
type Completion struct {
	Text  string
	Usage Usage
}

// Prompt asks a model.
type Prompt struct {
	User      string
	MaxTokens int32
}

// Auth logs users in.
type Auth interface {
	// Login counts failed logins only: a login that succeeds gives its
	// unit back.
	//
	//ratelimit:key=account window=15m max=5 refund=err == nil
	Login(ctx context.Context, account, password string) (*Session, error)

	// Verify counts wrong codes only, with a named error result.
	//
	//ratelimit:key=account window=15m max=5 refund=!errors.Is(err, ErrWrongPassword) algo=fixed-window
	Verify(ctx context.Context, account, code string) (err error)

	// Logout has results named like nothing the wrapper uses.
	//
	//ratelimit:key=account window=1m max=10 refund=ok && fail == nil algo=gcra
	Logout(ctx context.Context, account string) (ok bool, fail error)

	// Reset counts failed resets only, and waits up to 2s for room
	// rather than be denied.
	//
	//ratelimit:key=account window=1h max=3 refund=err == nil wait=2s
	Reset(ctx context.Context, account string) error
}

// Model completes prompts.
type Model interface {
	// Complete reserves the most a prompt may use and counts what it used.
	//
	//ratelimit:key=p.User window=1m max=100_000 cost=p.MaxTokens settle=resp.Usage.TotalTokens algo=token-bucket
	Complete(ctx context.Context, p Prompt) (*Completion, error)

	// Embed reserves a unit per text, waiting up to 500ms for room, and
	// counts the tokens it used.
	//
	//ratelimit:key=user window=1m max=10_000 cost=len(texts) settle=resp.Usage.TotalTokens wait=500ms
	Embed(ctx context.Context, user string, texts []string) (*Completion, error)

	// Stream has several unnamed results, and a refund beside a settle.
	//
	//ratelimit:key=user window=1m max=1000 cost=10 settle=resp1 refund=resp2 == "" algo=sliding-window
	//ratelimit:key=user window=1h max=100 name=Model.Stream.hourly
	Stream(ctx context.Context, user string) (int64, string, error)
}
