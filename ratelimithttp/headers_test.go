package ratelimithttp_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

var sendCode = runtime.Limit{Name: "Notifier.SendCode", Window: time.Minute, Max: 3}

func TestSetHeadersOnAdmission(t *testing.T) {
	h := http.Header{}
	ratelimithttp.SetHeaders(h, sendCode, runtime.Decision{Allowed: true, Remaining: 2, ResetAfter: 60 * time.Second})
	assert.Equal(t, []string{`"Notifier.SendCode";q=3;w=60`}, h.Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"Notifier.SendCode";r=2;t=60`}, h.Values("RateLimit"))
	assert.Empty(t, h.Get("Retry-After"), "an admission has nothing to retry")
}

func TestSetHeadersRoundsUp(t *testing.T) {
	cases := []struct {
		name   string
		window time.Duration
		d      runtime.Decision
		policy string
		limit  string
	}{
		{"reset just under a second", time.Second, runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: 999 * time.Millisecond},
			`"x";q=3;w=1`, `"x";r=1;t=1`},
		{"fractional window and reset", 1500 * time.Millisecond, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: 1200 * time.Millisecond},
			`"x";q=3;w=2`, `"x";r=0;t=2`},
		{"microsecond window", time.Microsecond, runtime.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Microsecond},
			`"x";q=3;w=1`, `"x";r=2;t=1`},
		{"unknown reset leaves t out", time.Minute, runtime.Decision{Allowed: true, Remaining: 2},
			`"x";q=3;w=60`, `"x";r=2`},
		{"denial uses RetryAfter, not ResetAfter", time.Minute, runtime.Decision{RetryAfter: 41200 * time.Millisecond, ResetAfter: 59 * time.Second},
			`"x";q=3;w=60`, `"x";r=0;t=42`},
		{"denial with zero RetryAfter still says 1", time.Minute, runtime.Decision{},
			`"x";q=3;w=60`, `"x";r=0;t=1`},
		{"negative remaining clamps to 0", time.Minute, runtime.Decision{Allowed: true, Remaining: -4, ResetAfter: time.Minute},
			`"x";q=3;w=60`, `"x";r=0;t=60`},
		{"remaining above Max clamps to Max", time.Minute, runtime.Decision{Allowed: true, Remaining: 10, ResetAfter: time.Minute},
			`"x";q=3;w=60`, `"x";r=3;t=60`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			ratelimithttp.SetHeaders(h, runtime.Limit{Name: "x", Window: tc.window, Max: 3}, tc.d)
			assert.Equal(t, []string{tc.policy}, h.Values("RateLimit-Policy"))
			assert.Equal(t, []string{tc.limit}, h.Values("RateLimit"))
		})
	}
}

func TestSetHeadersEscapesNames(t *testing.T) {
	cases := []struct{ name, want string }{
		{`say "hi"`, `"say \"hi\""`},
		{`back\slash`, `"back\\slash"`},
		{"tab\tand\nnewline", `"tab%09and%0anewline"`},
		{"100%", `"100%25"`},
		{"Отправка", `"%d0%9e%d1%82%d0%bf%d1%80%d0%b0%d0%b2%d0%ba%d0%b0"`},
		{"bad\xffutf8", `"bad%ffutf8"`},
		{"~ printable ASCII stays !#$&'()*+,-./:;<=>?@[]^_`{|}", "\"~ printable ASCII stays !#$&'()*+,-./:;<=>?@[]^_`{|}\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			ratelimithttp.SetHeaders(h, runtime.Limit{Name: tc.name, Window: time.Minute, Max: 3},
				runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Minute})
			assert.Equal(t, tc.want+";q=3;w=60", h.Get("RateLimit-Policy"))
			assert.Equal(t, tc.want+";r=1;t=60", h.Get("RateLimit"))
			for _, f := range []string{"RateLimit-Policy", "RateLimit"} {
				_, err := parseSFItem(h.Get(f))
				assert.NoError(t, err, "%s must be a valid structured field", f)
			}
		})
	}
}

// FuzzSetHeaders checks that any Limit name yields valid structured fields
// whose name round-trips through an RFC 9651 parser, and that distinct names
// stay distinct.
func FuzzSetHeaders(f *testing.F) {
	for _, s := range []string{"Notifier.SendCode", `a"b\c`, "%41", "A", "\x00", "é", "\xff"} {
		f.Add(s, "other")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" {
			return
		}
		na := fieldName(t, a)
		nb := fieldName(t, b)
		if (a == b) != (na == nb) {
			t.Fatalf("names %q and %q map to %q and %q", a, b, na, nb)
		}
	})
}

func fieldName(t *testing.T, name string) string {
	t.Helper()
	h := http.Header{}
	ratelimithttp.SetHeaders(h, runtime.Limit{Name: name, Window: time.Second, Max: 1}, runtime.Decision{Allowed: true, ResetAfter: time.Second})
	p, err := parseSFItem(h.Get("RateLimit-Policy"))
	require.NoError(t, err)
	r, err := parseSFItem(h.Get("RateLimit"))
	require.NoError(t, err)
	require.Equal(t, p.name, r.name)
	require.Equal(t, []string{"q", "w"}, p.order)
	require.Equal(t, []string{"r", "t"}, r.order)
	return p.name
}

func TestSetHeadersReplacesSamePolicyKeepsOthers(t *testing.T) {
	h := http.Header{}
	perIP := runtime.Limit{Name: "route.ip", Window: 10 * time.Second, Max: 100}
	ratelimithttp.SetHeaders(h, perIP, runtime.Decision{Allowed: true, Remaining: 99, ResetAfter: 10 * time.Second})
	ratelimithttp.SetHeaders(h, sendCode, runtime.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Minute})
	ratelimithttp.SetHeaders(h, sendCode, runtime.Decision{Allowed: true, Remaining: 1, ResetAfter: 30 * time.Second})

	assert.Equal(t, []string{`"route.ip";q=100;w=10`, `"Notifier.SendCode";q=3;w=60`}, h.Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"route.ip";r=99;t=10`, `"Notifier.SendCode";r=1;t=30`}, h.Values("RateLimit"))
}

func TestSetHeadersIgnoresInvalidLimit(t *testing.T) {
	for _, l := range []runtime.Limit{{}, {Name: "x", Window: time.Minute}, {Name: "x", Max: 1}, {Window: time.Minute, Max: 1}} {
		h := http.Header{}
		ratelimithttp.SetHeaders(h, l, runtime.Decision{Allowed: true, Remaining: 1})
		assert.Empty(t, h, "limit %+v", l)
	}
}

func TestSetHeadersFieldNamesMatchCaseInsensitively(t *testing.T) {
	h := http.Header{}
	ratelimithttp.SetHeaders(h, sendCode, runtime.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Minute})
	for k := range h {
		assert.True(t, strings.EqualFold(k, "RateLimit") || strings.EqualFold(k, "RateLimit-Policy"), k)
	}
	assert.NotEmpty(t, h.Get("ratelimit"))
	assert.NotEmpty(t, h.Get("ratelimit-policy"))
}
