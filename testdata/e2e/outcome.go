package e2e

import (
	"context"
	"errors"
)

// ErrWrongCode is a wrong verification code.
var ErrWrongCode = errors.New("wrong code")

// Tokens is what a completion used.
type Tokens struct{ Total int }

// Answer is a completion.
type Answer struct {
	Text  string
	Usage *Tokens
}

// Guard counts what its calls did.
type Guard interface {
	// Verify counts wrong codes only.
	//
	//ratelimit:key=user window=1h max=3 refund=!errors.Is(err, ErrWrongCode)
	Verify(ctx context.Context, user, code string) error

	// Login counts failures only; its results are named.
	//
	//ratelimit:key=user window=1h max=2 algo=fixed-window refund=failed == nil
	Login(ctx context.Context, user string) (session string, failed error)

	// Complete reserves the prompt's budget and counts what it used.
	//
	//ratelimit:key=user window=1h max=100 cost=budget settle=resp.Usage.Total algo=gcra
	Complete(ctx context.Context, user string, budget int) (*Answer, error)

	// Fetch gives back its first limit's unit when the page was cached
	// (its second result, unnamed: resp2), and keeps its second's.
	//
	//ratelimit:key=user window=1h max=2 algo=sliding-window refund=resp2
	//ratelimit:key=user window=1h max=3 name=Guard.Fetch.all algo=token-bucket
	Fetch(ctx context.Context, user string) (int, bool, error)

	// Retry counts failures only, one per 50ms, and a call waits for the
	// room rather than be denied.
	//
	//ratelimit:key=user window=50ms max=1 refund=err == nil wait=10s
	Retry(ctx context.Context, user string) error
}
