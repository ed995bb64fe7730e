package parse

import (
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNearMissWarns(t *testing.T) {
	const (
		lead  = "comment looks like a //ratelimit: directive but is ignored: "
		space = `there is a space after "//" (gofmt inserts one in doc comments when the rest is not an exact directive)`
		fix   = "; write //ratelimit:key=a window=1s max=1"
		empty = "; write e.g. //ratelimit:key=req.Email window=60s max=3"
	)
	tests := []struct{ text, msg string }{
		{"// ratelimit:key=a window=1s max=1", space + fix},
		{"//  ratelimit:key=a window=1s max=1", space + fix},
		{"//\tratelimit:key=a window=1s max=1", space + fix},
		{"// ratelimit: key=a window=1s max=1", space + fix},
		{"// ratelimit:", space + empty},
		{"//rateLimit:key=a window=1s max=1", "it is spelt rateLimit rather than ratelimit" + fix},
		{"// rateLimit:key=a window=1s max=1", space + "; it is spelt rateLimit rather than ratelimit" + fix},
		{"//RateLimit:key=a window=1s max=1", "it is spelt RateLimit rather than ratelimit" + fix},
		{"//RATELIMIT:", "it is spelt RATELIMIT rather than ratelimit" + empty},
		{"//rate-limit:key=a window=1s max=1", "it is spelt rate-limit rather than ratelimit" + fix},
		{"//rate_limit:key=a window=1s max=1", "it is spelt rate_limit rather than ratelimit" + fix},
		{"//ratelimiter:key=a window=1s max=1", "it is spelt ratelimiter rather than ratelimit" + fix},
		{"//ratelimits:key=a window=1s max=1", "it is spelt ratelimits rather than ratelimit" + fix},
		{"//rateLimit:anything at all", "it is spelt rateLimit rather than ratelimit; write //ratelimit:anything at all"},
		{"//ratelimit key=a window=1s max=1", `there is no ":" after ratelimit` + fix},
		{"//ratelimit ", `there is no ":" after ratelimit` + empty},
		{"//ratelimit", `there is no ":" after ratelimit` + empty},
		{"//ratelimit=key=a window=1s max=1", `it has "=" where ":" belongs` + fix},
		{"//ratelimit :key=a window=1s max=1", `there is a space before ":"` + fix},
		{"// +ratelimit:key=a window=1s max=1", space + `; there is a "+" after "//"` + fix},
		{"//+ratelimit:key=a window=1s max=1", `there is a "+" after "//"` + fix},
		{"// +ratelimit:see below", space + `; there is a "+" after "//"; write //ratelimit:see below`},
		{"// RateLimit: key=a window=1s max=1", space + "; it is spelt RateLimit rather than ratelimit" + fix},
		{"// ratelimit key=a window=1s max=1", space + `; there is no ":" after ratelimit` + fix},
		{"/*ratelimit:key=a window=1s max=1*/", "it is a /* */ comment, but directives are // comments" + fix},
		// The space after "/*" is not worth a reason of its own: the fix
		// rewrites the comment anyway.
		{"/* ratelimit:key=a window=1s max=1\n more */", "it is a /* */ comment, but directives are // comments" + fix},
	}
	pos := token.Position{Filename: "svc.go", Offset: 40, Line: 3, Column: 2}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			e := NearMiss(tt.text, pos)
			require.NotNil(t, e)
			assert.Equal(t, pos, e.Pos)
			assert.Equal(t, lead+tt.msg, e.Msg)
		})
	}
}

func TestNearMissSilent(t *testing.T) {
	for _, text := range []string{
		// Real directives are Line's business, valid or not.
		"//ratelimit:key=a window=1s max=1",
		"//ratelimit:",
		"//ratelimit:windw=1",
		// Prose about rate limits.
		"// ratelimit the calls",
		"// ratelimit",
		"// RateLimit returns the limit for key.",
		"// ratelimit: the calls are limited per user",
		"// RateLimit: 100 requests a second",
		"// Ratelimiter: wraps a Limiter",
		"// rate limit: 3 per minute",
		"// ratelimiting is hard",
		"// rate-limited: key=a",
		"// ratelimiter's job is to say no",
		"// see ratelimit:key=a",
		"// RateLimit = 5",
		"//ratelimit the calls",
		// Code.
		"//ratelimit.Do(x)",
		"//ratelimiter := New()",
		"//rateLimit == nil",
		"//rateLimit = 5",
		"//rateLimit = key=a",
		"//go:generate ratelimitgen",
		"/* ratelimit the calls */",
		// Degenerate.
		"", "/", "//", "/*", "/**/", "ratelimit:key=a", "x",
	} {
		assert.Nil(t, NearMiss(text, base), "%q", text)
	}
}

// TestNearMissFixIsADirective checks that the suggested fix is a valid
// directive whenever the near miss held a valid one.
func TestNearMissFixIsADirective(t *testing.T) {
	for _, text := range []string{
		"// ratelimit:key=a window=1s max=1",
		"//rateLimit: key=a window=1s max=1",
		"//ratelimit=key=a window=1s max=1",
		"// +rate_limit :key=a window=1s max=1",
	} {
		e := NearMiss(text, base)
		require.NotNil(t, e, text)
		fix := e.Msg[len(e.Msg)-len("//ratelimit:key=a window=1s max=1"):]
		d, errs := Line(fix, base)
		require.NotNil(t, d, text)
		assert.Nil(t, errs, text)
	}
}
