package parse

import (
	"go/token"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// base is where the test comments start: a tab-indented interface method's
// doc comment, not at offset 0, so that offsets and columns are both
// exercised.
var base = token.Position{Filename: "svc.go", Offset: 300, Line: 12, Column: 2}

// colOf returns the column of the n-th (from 0) occurrence of marker in
// text, so that expected positions are written as the text they point at.
func colOf(t *testing.T, text, marker string, n int) int {
	t.Helper()
	off := -1
	for k := 0; k <= n; k++ {
		i := strings.Index(text[off+1:], marker)
		require.GreaterOrEqual(t, i, 0, "marker %q (#%d) not in %q", marker, n, text)
		off += 1 + i
	}
	return base.Column + off
}

type wantExpr struct {
	text string
	at   string // text around it, whose first occurrence locates it; text itself if empty
}

func TestLineValid(t *testing.T) {
	tests := []struct {
		text   string
		key    []wantExpr
		window time.Duration
		max    int
		name   string
		algo   runtime.Algorithm
		burst  int
		cost   string
	}{
		{
			text: "//ratelimit:key=req.Email window=60s max=3",
			key:  []wantExpr{{text: "req.Email"}}, window: time.Minute, max: 3,
		},
		{
			text: "//ratelimit:max=3 name=Notifier.SendCode window=1m key=req.Email",
			key:  []wantExpr{{text: "req.Email"}}, window: time.Minute, max: 3, name: "Notifier.SendCode",
		},
		{
			text:   "//ratelimit:window=1h max=1000",
			window: time.Hour, max: 1000,
		},
		{
			text:   "//ratelimit:window=1h30m\t\tmax=1_000_000 \t  name=sendcode-per-email  ",
			window: 90 * time.Minute, max: 1000000, name: "sendcode-per-email",
		},
		{
			text: "//ratelimit:key=req.Tenant, strings.ToLower(req.Email),f(a, b) window=60s max=3",
			key: []wantExpr{
				{text: "req.Tenant"}, {text: "strings.ToLower(req.Email)"}, {text: "f(a, b)"},
			},
			window: time.Minute, max: 3,
		},
		{
			text:   `//ratelimit:key=user.Tenant + "/" + name window=60s max=3`,
			key:    []wantExpr{{text: `user.Tenant + "/" + name`}},
			window: time.Minute, max: 3,
		},
		{
			// Commas, spaces, "=" and option-like text inside literals.
			text: "//ratelimit:key=fmt.Sprint(\"a, b\", ',', `c d=e`), \"window=1s max=9\" window=1s max=1",
			key: []wantExpr{
				{text: "fmt.Sprint(\"a, b\", ',', `c d=e`)"}, {text: `"window=1s max=9"`},
			},
			window: time.Second, max: 1,
		},
		{
			text:   `//ratelimit:key='\'', "\" max=2", x max=1 window=1s`,
			key:    []wantExpr{{text: `'\''`}, {text: `"\" max=2"`}, {text: "x", at: " x "}},
			window: time.Second, max: 1,
		},
		{
			text:   `//ratelimit:key=f[T](x), Pair[K, V]{k, v}.String(), m["k v"], s[1:2] window=1s max=2`,
			key:    []wantExpr{{text: "f[T](x)"}, {text: "Pair[K, V]{k, v}.String()"}, {text: `m["k v"]`}, {text: "s[1:2]"}},
			window: time.Second, max: 2,
		},
		{
			// "==" and "=" inside brackets do not start options.
			text:   "//ratelimit:key=a == b, cond(x == y), T{A: 1, B: \"x y\"}.String() window=1s max=1",
			key:    []wantExpr{{text: "a == b"}, {text: "cond(x == y)"}, {text: `T{A: 1, B: "x y"}.String()`}},
			window: time.Second, max: 1,
		},
		{
			text:   "//ratelimit:key=func() string { s := a; s = b; return s }() window=1s max=1",
			key:    []wantExpr{{text: "func() string { s := a; s = b; return s }()"}},
			window: time.Second, max: 1,
		},
		{
			text:   "//ratelimit:key=-x, !ok, <-ch, *p, a != b, a <= b window=1s max=1",
			key:    []wantExpr{{text: "-x"}, {text: "!ok"}, {text: "<-ch"}, {text: "*p"}, {text: "a != b"}, {text: "a <= b"}},
			window: time.Second, max: 1,
		},
		{
			// Option names are valid key operands when not alone after an
			// operand: a parameter may be called name or max.
			text:   "//ratelimit:key=req.Tenant, name, max window=1s max=1",
			key:    []wantExpr{{text: "req.Tenant"}, {text: "name", at: " name"}, {text: "max", at: " max"}},
			window: time.Second, max: 1,
		},
		{
			text:   "//ratelimit:key=window window=1µs max=2147483647",
			key:    []wantExpr{{text: "window"}},
			window: time.Microsecond, max: 2147483647,
		},
		{
			text:   "//ratelimit:window=1.5s max=1 key=\"global\"",
			key:    []wantExpr{{text: `"global"`}},
			window: 1500 * time.Millisecond, max: 1,
		},
		{
			text:   "//ratelimit:window=500ms max=1 name=a/b:c@d",
			window: 500 * time.Millisecond, max: 1, name: "a/b:c@d",
		},
		{
			text: "//ratelimit:key=req.Email window=1s max=50 algo=token-bucket burst=100",
			key:  []wantExpr{{text: "req.Email"}}, window: time.Second, max: 50, algo: "token-bucket", burst: 100,
		},
		{
			text:   "//ratelimit:burst=1_000 algo=gcra window=1m max=10",
			window: time.Minute, max: 10, algo: "gcra", burst: 1000,
		},
		{
			text:   "//ratelimit:window=1m max=10 algo=sliding-log",
			window: time.Minute, max: 10, algo: "sliding-log",
		},
		{
			text:   "//ratelimit:window=1m max=10 algo=sliding-window name=x",
			window: time.Minute, max: 10, algo: "sliding-window", name: "x",
		},
		{
			text:   "//ratelimit:window=1m max=10 algo=fixed-window",
			window: time.Minute, max: 10, algo: "fixed-window",
		},
		{
			text:   "//ratelimit:window=1m max=10 algo=token-bucket",
			window: time.Minute, max: 10, algo: "token-bucket",
		},
		{
			text: "//ratelimit:key=req.Tenant cost=len(req.Items) window=1m max=100",
			key:  []wantExpr{{text: "req.Tenant"}}, window: time.Minute, max: 100, cost: "len(req.Items)",
		},
		{
			// A cost expression may hold spaces, brackets and literals.
			text:   `//ratelimit:window=1m max=100 cost=weight(req, "a b", []int{1, 2}) + 1`,
			window: time.Minute, max: 100, cost: `weight(req, "a b", []int{1, 2}) + 1`,
		},
		{
			// An option name as a cost operand, not alone after an operand.
			text:   "//ratelimit:cost=max window=1m max=100",
			window: time.Minute, max: 100, cost: "max",
		},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			d, errs := Line(tt.text, base)
			require.Empty(t, errs)
			require.NotNil(t, errs == nil, "errors must be nil, not empty, when there are none")
			require.NotNil(t, d)
			assert.Equal(t, base, d.Pos)
			assert.Equal(t, tt.window, d.Window)
			assert.Equal(t, tt.max, d.Max)
			assert.Equal(t, tt.name, d.Name)
			assert.Equal(t, tt.algo, d.Algorithm)
			assert.Equal(t, tt.burst, d.Burst)
			if tt.cost == "" {
				assert.Nil(t, d.Cost)
			} else if assert.NotNil(t, d.Cost) {
				col := colOf(t, tt.text, "cost=", 0) + len("cost=")
				assert.Equal(t, Expr{Text: tt.cost, Pos: token.Position{
					Filename: base.Filename,
					Line:     base.Line,
					Column:   col,
					Offset:   base.Offset + col - base.Column,
				}}, *d.Cost)
			}
			require.Len(t, d.Key, len(tt.key))
			for i, w := range tt.key {
				at := w.at
				if at == "" {
					at = w.text
				}
				col := colOf(t, tt.text, at, 0) + strings.Index(at, w.text)
				assert.Equal(t, w.text, d.Key[i].Text)
				assert.Equal(t, token.Position{
					Filename: base.Filename,
					Line:     base.Line,
					Column:   col,
					Offset:   base.Offset + col - base.Column,
				}, d.Key[i].Pos, "position of key part %q", w.text)
			}
		})
	}
}

func TestLineOptionsAsWritten(t *testing.T) {
	text := "//ratelimit:max=3 key=a, b  window=60s"
	d, errs := Line(text, base)
	require.Nil(t, errs)
	pos := func(marker string) token.Position {
		c := colOf(t, text, marker, 0)
		return token.Position{Filename: "svc.go", Line: 12, Column: c, Offset: base.Offset + c - base.Column}
	}
	assert.Equal(t, []Option{
		{Name: "max", Value: "3", NamePos: pos("max"), ValuePos: pos("3")},
		{Name: "key", Value: "a, b", NamePos: pos("key"), ValuePos: pos("a,")},
		{Name: "window", Value: "60s", NamePos: pos("window"), ValuePos: pos("60s")},
	}, d.Options)
	o, ok := d.Lookup("window")
	assert.True(t, ok)
	assert.Equal(t, "60s", o.Value)
	_, ok = d.Lookup("name")
	assert.False(t, ok)
}

func TestLineNotADirective(t *testing.T) {
	for _, text := range []string{
		"", "//", "// ratelimit:key=a", "//ratelimit", "//ratelimit key=a", "/*ratelimit:key=a*/",
		"//RATELIMIT:key=a", "ratelimit:key=a", "//go:generate ratelimitgen",
	} {
		d, errs := Line(text, base)
		assert.Nil(t, d, "%q", text)
		assert.Nil(t, errs, "%q", text)
	}
}

type wantErr struct {
	at  string // marker of the position; "" for the directive's start
	nth int    // which occurrence of at
	msg string
}

func TestLineErrors(t *testing.T) {
	tests := []struct {
		text string
		errs []wantErr
	}{
		// Empty directives.
		{"//ratelimit:", []wantErr{{"", 0, "empty directive; write e.g. //ratelimit:key=req.Email window=60s max=3"}}},
		{"//ratelimit: \t ", []wantErr{{"", 0, "empty directive; write e.g. //ratelimit:key=req.Email window=60s max=3"}}},

		// Layout.
		{"//ratelimit: key=a window=1s max=1", []wantErr{{":", 0, `remove the space after "//ratelimit:": in doc comments gofmt keeps a line as a directive only when a lower-case letter follows the colon, and rewrites the rest as prose`}}},
		{"//ratelimit:key=a window =60s max=1", []wantErr{{"=60s", 0, `remove the spaces around "=": write window=60s`}}},
		{"//ratelimit:key=a window=1s max= 3", []wantErr{{"= 3", 0, `remove the spaces around "=": write max=3`}}},
		{"//ratelimit:key=a window\t=\t1s max=1", []wantErr{{"=\t", 0, `remove the spaces around "=": write window=1s`}}},
		{"//ratelimit:key=a window = max=1", []wantErr{
			{"= ", 0, `remove the spaces around "="`},
			{"window", 0, `option "window" has an empty value; write e.g. window=60s`},
		}},
		{"//ratelimit:key=a window=1s max=1 // three a second", []wantErr{{"//", 1, `a directive cannot be followed by a comment on the same line; move "// three a second" to a line of its own`}}},
		{"//ratelimit:key=a window=1s max=1 /* x */", []wantErr{{"/*", 0, `a directive cannot be followed by a comment on the same line; move "/* x */" to a line of its own`}}},
		{"//ratelimit:key=a//x window=1s max=1", []wantErr{{"//x", 0, `a directive cannot be followed by a comment on the same line; move "//x window=1s max=1" to a line of its own`}}},

		{"//ratelimit:window=1s,max=3", []wantErr{{",", 0, `separate options with spaces, not ","`}}},
		{"//ratelimit:key=f(a, b), g(c);max=3 window=1s", []wantErr{{";", 0, `separate options with spaces, not ";"`}}},
		{"//ratelimit:key=a, max=3, window=1s", []wantErr{
			{",", 0, `separate options with spaces, not ","`},
			{",", 1, `separate options with spaces, not ","`},
		}},

		// Unknown, unsupported and duplicate options.
		{"//ratelimit:key=a windw=60s max=3", []wantErr{{"windw", 0, `unknown option "windw"; did you mean "window"?`}}},
		{"//ratelimit:key=a wnidow=60s max=3", []wantErr{{"wnidow", 0, `unknown option "wnidow"; did you mean "window"?`}}},
		{"//ratelimit:Key=a window=60s max=3", []wantErr{{"Key", 0, `unknown option "Key"; did you mean "key"?`}}},
		{"//ratelimit:key=a window=60s limit=3", []wantErr{{"limit=", 0, `unknown option "limit"; did you mean "max"?`}}},
		{"//ratelimit:key=a per=1s max=3", []wantErr{{"per", 0, `unknown option "per"; did you mean "window"?`}}},
		{"//ratelimit:key=a window=1s max=3 foo=bar", []wantErr{{"foo", 0, `unknown option "foo"; the options are key, window, tz, max, algo, burst, cost, name, wait, mode, refund, settle, concurrency, lease`}}},
		{"//ratelimit:key=a window=1s max=3 algorithm=gcra", []wantErr{{"algorithm", 0, `unknown option "algorithm"; did you mean "algo"?`}}},
		{"//ratelimit:key=a window=1s max=3 weight=2", []wantErr{{"weight", 0, `unknown option "weight"; did you mean "cost"?`}}},
		{"//ratelimit:key=a window=1s max=3 capacity=5 algo=gcra", []wantErr{{"capacity", 0, `unknown option "capacity"; did you mean "burst"?`}}},
		{"//ratelimit:key=a window=1s max=3 brust=5 algo=gcra", []wantErr{{"brust", 0, `unknown option "brust"; did you mean "burst"?`}}},
		{"//ratelimit:window=1s key=a max=3 window=2s", []wantErr{{"window", 1, `duplicate option "window"; it is already set at svc.go:12:14: remove one`}}},

		// Options without a value.
		{"//ratelimit:key=req.Email window max=3", []wantErr{{"window", 0, `option "window" has no value; write window=60s; if it is part of the key, separate key parts with commas`}}},
		{"//ratelimit:window max=3", []wantErr{{"window", 0, `option "window" has no value; write window=60s`}}},
		{"//ratelimit:window=1s max=3 burst", []wantErr{{"burst", 0, `option "burst" has no value; write burst=20`}}},
		{"//ratelimit:key=a cost window=1s max=3", []wantErr{{"cost", 0, `option "cost" has no value; write cost=len(req.Items); if it is part of the key, separate key parts with commas`}}},
		{"//ratelimit:key:req.Email window=1s max=3", []wantErr{{"key", 0, `options are written name=value, with "=" rather than ":"; found "key:req.Email"`}}},
		{"//ratelimit:window:1s max=3", []wantErr{{"window", 0, `options are written name=value, with "=" rather than ":"; found "window:1s"`}}},
		{`//ratelimit:"x" window=1s max=3`, []wantErr{{`"x"`, 0, `expected an option name=value, found "\"x\""`}}},
		{"//ratelimit:=4 window=1s max=3", []wantErr{{"=4", 0, `expected an option name=value, found "=4"`}}},
		// Only "name=" or a lone option name ends a value: the rest is the value's.
		{"//ratelimit:key=a window=1s max=3 =4", []wantErr{{"3 =4", 0, `max "3 =4" is not a whole number; write e.g. max=10`}}},
		{"//ratelimit:key= window=1s max=3", []wantErr{{"key", 0, `option "key" has an empty value; write e.g. key=req.Email`}}},
		{"//ratelimit:window=1s max=3 key=", []wantErr{{"key", 0, `option "key" has an empty value; write e.g. key=req.Email`}}},
		{"//ratelimit:window= max=3", []wantErr{{"window", 0, `option "window" has an empty value; write e.g. window=60s`}}},

		// Missing options.
		{"//ratelimit:key=a", []wantErr{
			{"", 0, "directive has no window; add e.g. window=60s"},
			{"", 0, "directive has no max; add e.g. max=10"},
		}},
		{"//ratelimit:key=a max=3", []wantErr{{"", 0, "directive has no window; add e.g. window=60s"}}},
		{"//ratelimit:window=1s name=x", []wantErr{{"", 0, "directive has no max; add e.g. max=10"}}},

		// key=
		{"//ratelimit:key=a,,b window=1s max=1", []wantErr{{",", 1, `empty key part; remove the extra ","`}}},
		{"//ratelimit:window=1s max=1 key=a,", []wantErr{{",", 0, `empty key part; remove the extra ","`}}},
		{"//ratelimit:window=1s max=1 key=a,\t", []wantErr{{",", 0, `empty key part; remove the extra ","`}}},
		{"//ratelimit:key=,a window=1s max=1", []wantErr{{",", 0, `empty key part; remove the extra ","`}}},
		{"//ratelimit:window=1s max=1 key=,", []wantErr{{",", 0, `empty key part; remove the extra ","`}}},
		{"//ratelimit:key=a +, b window=1s max=1", []wantErr{{"a +", 0, `key part "a +" is not a Go expression: expected operand, found 'EOF'`}}},
		{"//ratelimit:key=a, f(x=y) window=1s max=1", []wantErr{{"f(", 0, `key part "f(x=y)" is not a Go expression: expected '==', found '='`}}},
		{"//ratelimit:key=a;b window=1s max=1", []wantErr{{"a;b", 0, `key part "a;b" is not a Go expression: expected 'EOF', found ';'`}}},
		{"//ratelimit:key=a b window=1s max=1", []wantErr{{"a b", 0, `key part "a b" is not a Go expression: expected 'EOF', found b`}}},
		{"//ratelimit:key=f(x window=1s max=1", []wantErr{{"(", 0, `"(" in key= is not closed; close it with ")"`}}},
		{"//ratelimit:key=m[f(x)] + g(y window=1s max=1", []wantErr{{"(y", 0, `"(" in key= is not closed; close it with ")"`}}},
		{`//ratelimit:key="abc window=1s max=1`, []wantErr{{`"`, 0, `string literal in key= is not terminated; close it with "`}}},
		{"//ratelimit:key=`abc window=1s max=1", []wantErr{{"`", 0, "raw string literal in key= is not terminated; close it with `"}}},
		{`//ratelimit:key='a window=1s max=1`, []wantErr{{`'`, 0, `rune literal in key= is not terminated; close it with '`}}},

		// window=
		{"//ratelimit:window=60 max=1", []wantErr{{"60", 0, `window "60" is not a Go duration; write it with a unit, e.g. window=60s`}}},
		{"//ratelimit:window=1.5 max=1", []wantErr{{"1.5", 0, `window "1.5" is not a Go duration; write it with a unit, e.g. window=1.5s`}}},
		{"//ratelimit:window=2d max=1", []wantErr{{"2d", 0, `window "2d": calendar windows are one period long, from the start of one day to the start of the next; write window=1d, or window=48h for a duration window of 48 hours, not aligned to midnight`}}},
		{"//ratelimit:window=2w max=1", []wantErr{{"2w", 0, `window "2w": calendar windows are one period long, from the start of one week to the start of the next; write window=1w, or window=336h for a duration window of 336 hours, not aligned to midnight`}}},
		{"//ratelimit:window=2mo max=1", []wantErr{{"2mo", 0, `window "2mo": calendar windows are one period long, from the start of one month to the start of the next; write window=1mo`}}},
		{"//ratelimit:window=0y max=1", []wantErr{{"0y", 0, `window "0y": calendar windows are one period long, from the start of one year to the start of the next; write window=1y`}}},
		{"//ratelimit:window=01mo max=1", []wantErr{{"01mo", 0, `window "01mo": calendar windows are one period long, from the start of one month to the start of the next; write window=1mo`}}},
		{"//ratelimit:window=1month max=1", []wantErr{{"1month", 0, `window "1month" is not a window; write window=1mo for a calendar month (calendar windows are one period long), or a Go duration such as window=60s`}}},
		{"//ratelimit:window=1D max=1", []wantErr{{"1D", 0, `window "1D" is not a window; write window=1d for a calendar day (calendar windows are one period long), or a Go duration such as window=60s`}}},
		{"//ratelimit:window=1M max=1", []wantErr{{"1M", 0, `window "1M" is not a Go duration, whose units are lower case; write window=1m for minutes, or window=1mo for a calendar month`}}},
		{"//ratelimit:window=1mo tz=Europe/Berln max=1", []wantErr{{"Europe/Berln", 0, `unknown time zone "Europe/Berln"; write an IANA time zone name, e.g. tz=Europe/Berlin or tz=America/New_York (zone names are case-sensitive)`}}},
		{"//ratelimit:window=1mo tz=\"Europe/Berlin\" max=1", []wantErr{{"\"Europe", 0, `write the time zone without quotes: tz=Europe/Berlin`}}},
		{"//ratelimit:window=1d tz=Local max=1", []wantErr{{"Local", 0, `tz=Local is the time zone of whichever machine runs the program; name the zone, e.g. tz=Europe/Berlin, or remove tz= for UTC`}}},
		{"//ratelimit:window=1d tz=../../etc/passwd max=1", []wantErr{{"../", 0, `unknown time zone "../../etc/passwd"; write an IANA time zone name, e.g. tz=Europe/Berlin or tz=America/New_York (zone names are case-sensitive)`}}},
		{"//ratelimit:window=24h tz=Europe/Berlin max=1", []wantErr{{"tz", 0, `tz= applies only to a calendar window (window=1d, 1w, 1mo or 1y), whose periods begin at midnight in that zone; window=24h is a duration, the same in every zone: remove tz=`}}},
		{"//ratelimit:tz=UTC max=1", []wantErr{{"", 0, `directive has no window; add e.g. window=60s`}, {"tz", 0, `tz= applies only to a calendar window (window=1d, 1w, 1mo or 1y), whose periods begin at midnight in that zone; this directive has no window=: remove tz=`}}},
		{"//ratelimit:window=2mo tz=UTC max=1", []wantErr{{"2mo", 0, `window "2mo": calendar windows are one period long, from the start of one month to the start of the next; write window=1mo`}}},
		{"//ratelimit:window=1mo max=1 algo=sliding-window", []wantErr{{"algo", 0, `window=1mo is a calendar window, and calendar windows are fixed windows, counted from the start of one month to the start of the next; algo=sliding-window has no calendar boundary: remove algo=, or use a duration window such as window=720h`}}},
		{"//ratelimit:window=1d max=1 algo=token-bucket burst=5", []wantErr{{"algo", 0, `window=1d is a calendar window, and calendar windows are fixed windows, counted from the start of one day to the start of the next; algo=token-bucket has no calendar boundary: remove algo=, or use a duration window such as window=24h`}}},
		{"//ratelimit:window=1w max=10 burst=5", []wantErr{{"burst", 0, `burst= applies only to algo=token-bucket and algo=gcra, whose bucket it sizes; this directive uses fixed-window (as window=1w is a calendar window): remove burst= or choose one of those algorithms`}}},
		{"//ratelimit:concurrency=2 tz=UTC", []wantErr{{"tz", 0, `concurrency= cannot be combined with tz=: a permit has a lease, not a calendar window; remove tz=`}}},
		{"//ratelimit:window=60S max=1", []wantErr{{"60S", 0, `window "60S" is not a Go duration, whose units are lower case; write window=60s`}}},
		{"//ratelimit:window=soon max=1", []wantErr{{"soon", 0, `window "soon" is not a Go duration; write e.g. window=60s, window=5m or window=1h30m, or a calendar window: window=1d, 1w, 1mo or 1y`}}},
		{"//ratelimit:window=1 minute max=1", []wantErr{{"1 minute", 0, `window "1 minute" is not a Go duration; write e.g. window=60s, window=5m or window=1h30m, or a calendar window: window=1d, 1w, 1mo or 1y`}}},
		{"//ratelimit:window=0s max=1", []wantErr{{"0s", 0, `window must be positive; got "0s"`}}},
		{"//ratelimit:window=-1m max=1", []wantErr{{"-1m", 0, `window must be positive; got "-1m"`}}},
		{"//ratelimit:window=999ns max=1", []wantErr{{"999ns", 0, `window "999ns" is shorter than 1µs, the limiter's resolution`}}},
		{"//ratelimit:window=1500ns max=1", []wantErr{{"1500ns", 0, `window "1500ns" is not a whole number of microseconds, the limiter's resolution`}}},

		// max=
		{"//ratelimit:window=1s max=0", []wantErr{{"0", 0, "max must be at least 1; got 0"}}},
		{"//ratelimit:window=1s max=0_0", []wantErr{{"0_0", 0, "max must be at least 1; got 0_0"}}},
		{"//ratelimit:window=1s max=-3", []wantErr{{"-3", 0, "max must be at least 1; got -3"}}},
		{"//ratelimit:window=1s max=3.5", []wantErr{{"3.5", 0, `max "3.5" is not a whole number; write e.g. max=10`}}},
		{"//ratelimit:window=1s max=+3", []wantErr{{"+3", 0, `max "+3" is not a whole number; write e.g. max=10`}}},
		{"//ratelimit:window=1s max=0x10", []wantErr{{"0x10", 0, `max "0x10" is not a whole number; write e.g. max=10`}}},
		{"//ratelimit:window=1s max=010", []wantErr{{"010", 0, `max "010" has a leading zero, which Go would read as octal; write max=10`}}},
		{"//ratelimit:window=1s max=1__000", []wantErr{{"1__000", 0, `max "1__000" has a misplaced "_"; "_" may only separate digits, as in max=1_000`}}},
		{"//ratelimit:window=1s max=1000_", []wantErr{{"1000_", 0, `max "1000_" has a misplaced "_"; "_" may only separate digits, as in max=1_000`}}},
		{"//ratelimit:window=1s max=2147483648", []wantErr{{"2147483648", 0, `max "2147483648" is too large; it can be at most 2147483647`}}},
		{"//ratelimit:window=1s max=99999999999999999999999", []wantErr{{"999", 0, `max "99999999999999999999999" is too large; it can be at most 2147483647`}}},

		// algo=
		{"//ratelimit:window=1s max=3 algo=token_bucket", []wantErr{{"token_", 0, `unknown algorithm "token_bucket"; did you mean "token-bucket"? The algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{"//ratelimit:window=1s max=3 algo=TokenBucket", []wantErr{{"Token", 0, `unknown algorithm "TokenBucket"; did you mean "token-bucket"? The algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{"//ratelimit:window=1s max=3 algo=slidng-window", []wantErr{{"slidng", 0, `unknown algorithm "slidng-window"; did you mean "sliding-window"? The algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{"//ratelimit:window=1s max=3 algo=leaky-bucket", []wantErr{{"leaky", 0, `unknown algorithm "leaky-bucket"; did you mean "gcra"? The algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{"//ratelimit:window=1s max=3 algo=fixed", []wantErr{{"fixed", 0, `unknown algorithm "fixed"; did you mean "fixed-window"? The algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{"//ratelimit:window=1s max=3 algo=GCRA", []wantErr{{"GCRA", 0, `unknown algorithm "GCRA"; did you mean "gcra"? The algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{"//ratelimit:window=1s max=3 algo=magic", []wantErr{{"magic", 0, `unknown algorithm "magic"; the algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{`//ratelimit:window=1s max=3 algo="gcra"`, []wantErr{{`"gcra"`, 0, `write the algorithm without quotes: algo=gcra`}}},
		{"//ratelimit:window=1s max=3 algo=", []wantErr{{"algo", 0, `option "algo" has an empty value; write e.g. algo=token-bucket`}}},

		// burst=
		{"//ratelimit:window=1s max=3 burst=5", []wantErr{{"burst", 0, `burst= applies only to algo=token-bucket and algo=gcra, whose bucket it sizes; this directive uses sliding-log (the default, as there is no algo=): remove burst= or choose one of those algorithms`}}},
		{"//ratelimit:window=1s max=3 burst=5 algo=fixed-window", []wantErr{{"burst", 0, `burst= applies only to algo=token-bucket and algo=gcra, whose bucket it sizes; this directive uses algo=fixed-window: remove burst= or choose one of those algorithms`}}},
		{"//ratelimit:window=1s max=3 burst=5 algo=sliding-log", []wantErr{{"burst", 0, `burst= applies only to algo=token-bucket and algo=gcra, whose bucket it sizes; this directive uses algo=sliding-log: remove burst= or choose one of those algorithms`}}},
		// A wrong algorithm is reported once, not again through burst=.
		{"//ratelimit:window=1s max=3 burst=5 algo=tokenbucket", []wantErr{{"tokenbucket", 0, `unknown algorithm "tokenbucket"; did you mean "token-bucket"? The algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`}}},
		{"//ratelimit:window=1s max=3 algo=gcra burst=0", []wantErr{{"0", 0, "burst must be at least 1; got 0"}}},
		{"//ratelimit:window=1s max=3 algo=gcra burst=-2", []wantErr{{"-2", 0, "burst must be at least 1; got -2"}}},
		{"//ratelimit:window=1s max=3 algo=gcra burst=lots", []wantErr{{"lots", 0, `burst "lots" is not a whole number; write e.g. burst=20`}}},
		{"//ratelimit:window=1s max=3 algo=gcra burst=05", []wantErr{{"05", 0, `burst "05" has a leading zero, which Go would read as octal; write burst=5`}}},
		{"//ratelimit:window=1s max=3 algo=gcra burst=1_", []wantErr{{"1_", 0, `burst "1_" has a misplaced "_"; "_" may only separate digits, as in burst=1_000`}}},
		{"//ratelimit:window=1s max=3 algo=gcra burst=4294967296", []wantErr{{"4294967296", 0, `burst "4294967296" is too large; it can be at most 2147483647`}}},
		{"//ratelimit:window=1s max=3 algo=gcra burst=2 burst=3", []wantErr{{"burst", 1, `duplicate option "burst"; it is already set at svc.go:12:40: remove one`}}},

		// cost=
		{"//ratelimit:window=1s max=3 cost=len(a), 2", []wantErr{{",", 0, `cost= takes one integer expression, not a list; remove the "," (key= is the option whose parts are separated by commas)`}}},
		{"//ratelimit:window=1s max=3 cost=len(a)+", []wantErr{{"len", 0, `cost "len(a)+" is not a Go expression: expected operand, found 'EOF'`}}},
		{"//ratelimit:window=1s max=3 cost=len(a", []wantErr{{"(a", 0, `"(" in cost= is not closed; close it with ")"`}}},
		{"//ratelimit:window=1s max=3 cost=", []wantErr{{"cost", 0, `option "cost" has an empty value; write e.g. cost=len(req.Items)`}}},

		// name=
		{`//ratelimit:window=1s max=1 name="Svc.Call"`, []wantErr{{`"Svc`, 0, `write the name without quotes: name=Svc.Call`}}},
		{`//ratelimit:window=1s max=1 name="Svc" Call`, []wantErr{{`"Svc`, 0, `name "Svc" Call starts with a quote; write the name without quotes`}}},
		{"//ratelimit:window=1s max=1 name=Svc Call", []wantErr{{"Svc", 0, `name "Svc Call" contains whitespace; use e.g. "-" or "." instead`}}},
		{"//ratelimit:window=1s max=1 name=a\u00a0b", []wantErr{{"a\u00a0", 0, `name "a\u00a0b" contains whitespace; use e.g. "-" or "." instead`}}},
		{"//ratelimit:window=1s max=1 name=a\x01b", []wantErr{{"a\x01", 0, `name "a\x01b" contains the unprintable character U+0001`}}},
		{"//ratelimit:window=1s max=1 name=a\xffb", []wantErr{{"a\xff", 0, `name "a\xffb" is not valid UTF-8`}}},

		// Every error is collected, in source order, then the missing ones.
		{"//ratelimit:hold key=a,,b windw=1 max=0 algo=x name=\"n\" burst=3", []wantErr{
			{"hold", 0, `expected an option name=value, found "hold"`},
			{",", 1, `empty key part; remove the extra ","`},
			{"windw", 0, `unknown option "windw"; did you mean "window"?`},
			{"0", 0, "max must be at least 1; got 0"},
			{"x", 1, `unknown algorithm "x"; the algorithms are sliding-log (the default), sliding-window, fixed-window, token-bucket, gcra`},
			{`"n"`, 0, `write the name without quotes: name=n`},
		}},
		// The burst check comes after the missing options.
		{"//ratelimit:burst=2 max=1", []wantErr{
			{"", 0, "directive has no window; add e.g. window=60s"},
			{"burst", 0, `burst= applies only to algo=token-bucket and algo=gcra, whose bucket it sizes; this directive uses sliding-log (the default, as there is no algo=): remove burst= or choose one of those algorithms`},
		}},
		{"//ratelimit:key=f(x window=1s", []wantErr{
			{"(", 0, `"(" in key= is not closed; close it with ")"`},
			{"", 0, "directive has no max; add e.g. max=10"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			d, errs := Line(tt.text, base)
			require.NotNil(t, d, "a directive is returned even with errors")
			var got, want []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			for _, w := range tt.errs {
				col := base.Column
				if w.at != "" {
					col = colOf(t, tt.text, w.at, w.nth)
				}
				want = append(want, token.Position{Filename: "svc.go", Line: 12, Column: col}.String()+": "+w.msg)
			}
			assert.Equal(t, want, got)
			for _, e := range errs {
				assert.Equal(t, e.Pos.Column-base.Column, e.Pos.Offset-base.Offset, "offset and column disagree")
			}
		})
	}
}

// TestLineTooLong checks that an absurdly long directive is refused rather
// than parsed in quadratic time.
func TestLineTooLong(t *testing.T) {
	long := Prefix + "window=1s max=1 key=" + strings.Repeat("a+", 2100) + "a"
	d, errs := Line(long, base)
	require.NotNil(t, d)
	require.Len(t, errs, 1)
	assert.Equal(t, "svc.go:12:2: directive is 4233 bytes long; the limit is 4096", errs[0].Error())

	ok := Prefix + "window=1s max=1 key=" + strings.Repeat("a+", 2030) + "a"
	_, errs = Line(ok, base)
	assert.Nil(t, errs)
}

// TestLineBestEffort checks that what is valid survives errors elsewhere,
// for a caller that goes on checking the rest.
func TestLineBestEffort(t *testing.T) {
	d, errs := Line("//ratelimit:key=a, b +, c window=2s max=1.5 name=x", base)
	require.Len(t, errs, 2)
	assert.Equal(t, []Expr{
		{Text: "a", Pos: token.Position{Filename: "svc.go", Offset: 316, Line: 12, Column: 18}},
		{Text: "c", Pos: token.Position{Filename: "svc.go", Offset: 324, Line: 12, Column: 26}},
	}, d.Key)
	assert.Equal(t, 2*time.Second, d.Window)
	assert.Zero(t, d.Max)
	assert.Equal(t, "x", d.Name)

	// The first of duplicate options is the one kept.
	d, errs = Line("//ratelimit:window=1s max=3 max=4", base)
	require.Len(t, errs, 1)
	assert.Equal(t, 3, d.Max)
	assert.Len(t, d.Options, 3)
}

// TestLinePositionWithoutBase checks that a zero pos still yields real
// positions (line 1, column 1 onwards).
func TestLinePositionWithoutBase(t *testing.T) {
	d, errs := Line("//ratelimit:key=a max=0", token.Position{})
	require.Len(t, errs, 2)
	assert.Equal(t, token.Position{Line: 1, Column: 1}, d.Pos)
	assert.Equal(t, "1:23: max must be at least 1; got 0", errs[0].Error())
	assert.Equal(t, "1:1: directive has no window; add e.g. window=60s", errs[1].Error())
	assert.Equal(t, token.Position{Offset: 16, Line: 1, Column: 17}, d.Key[0].Pos)
}

func TestOptions(t *testing.T) {
	assert.Equal(t, []string{"key", "window", "tz", "max", "algo", "burst", "cost", "name", "wait", "mode", "refund", "settle", "concurrency", "lease"}, Options)
	// The examples quoted in messages must themselves be valid: all in
	// one directive, but for the options of a concurrency directive.
	var examples []string
	for _, o := range optionTable {
		if o.name != "concurrency" && o.name != "lease" && o.name != "tz" {
			examples = append(examples, o.example)
		}
	}
	d, errs := Line(Prefix+strings.Join(examples, " "), base)
	assert.Nil(t, errs)
	assert.Len(t, d.Options, len(Options)-3)
	assert.Equal(t, 2*time.Second, d.Wait)
	assert.Equal(t, "err == nil", d.Refund.Text)
	assert.Equal(t, "resp.Usage.TotalTokens", d.Settle.Text)
	_, errs = Line(Prefix+"window=1s max=3 wait=2s", base)
	assert.Nil(t, errs)
	_, errs = Line(Prefix+"window=1mo max=3 "+example("tz"), base)
	assert.Nil(t, errs)
	_, errs = Line(Prefix+"concurrency=2 lease=30s", base)
	assert.Nil(t, errs)
}

func TestConcurrency(t *testing.T) {
	for _, tc := range []struct {
		text  string
		lease time.Duration
		max   int
	}{
		{"//ratelimit:key=req.TenantID concurrency=2", DefaultLease, 2},
		{"//ratelimit:concurrency=1_000 lease=1m name=Svc.Call.inflight mode=shadow", time.Minute, 1000},
		{"//ratelimit:lease=1s concurrency=1", time.Second, 1},
		{"//ratelimit:concurrency=3 lease=1h", time.Hour, 3},
		{"//ratelimit:key=req.TenantID concurrency=2 wait=5s", DefaultLease, 2},
	} {
		d, errs := Line(tc.text, base)
		require.Nil(t, errs, tc.text)
		assert.Equal(t, runtime.Concurrency, d.Algorithm, tc.text)
		assert.Equal(t, tc.lease, d.Window, tc.text)
		assert.Equal(t, tc.max, d.Max, tc.text)
		assert.Nil(t, d.MaxExpr, tc.text)
	}
}

func TestConcurrencyErrors(t *testing.T) {
	for _, tc := range []struct{ text, at, msg string }{
		{"//ratelimit:concurrency=0", "0", "concurrency must be at least 1; got 0"},
		{"//ratelimit:concurrency=-2", "-2", "concurrency must be at least 1; got -2"},
		{"//ratelimit:concurrency=req.N", "req", `concurrency "req.N" is not a whole number; write e.g. concurrency=2`},
		{"//ratelimit:concurrency=2.5", "2.5", `concurrency "2.5" is not a whole number; write e.g. concurrency=2`},
		{"//ratelimit:concurrency=3000000000", "3000", `concurrency "3000000000" is too large; it can be at most 2147483647`},
		{"//ratelimit:concurrency=2 concurrency=3", "concurrency", `duplicate option "concurrency"; it is already set at svc.go:12:14: remove one`},
		{"//ratelimit:concurrency=2 lease=30", "30", `lease "30" is not a Go duration; write e.g. lease=30s`},
		{"//ratelimit:concurrency=2 lease=500ms", "500ms", `lease "500ms" is out of bounds: a permit's lease is from 1s (renewed every third of it) to 1h0m0s (a crashed process keeps its permits that long)`},
		{"//ratelimit:concurrency=2 lease=2h", "2h", `lease "2h" is out of bounds: a permit's lease is from 1s (renewed every third of it) to 1h0m0s (a crashed process keeps its permits that long)`},
		{"//ratelimit:concurrency=2 lease=1.0001s", "1.0001s", `lease "1.0001s" is not a whole number of milliseconds; write e.g. lease=1s`},
		{"//ratelimit:concurrency=2 window=1m", "window", "concurrency= cannot be combined with window=: a permit has a lease, not a window; write lease= (default 30s), or remove window="},
		{"//ratelimit:concurrency=2 max=3", "max", "concurrency= cannot be combined with max=: concurrency= is the most calls in flight; remove max=, or put a rate limit on a //ratelimit: line of its own"},
		{"//ratelimit:concurrency=2 algo=gcra", "algo", "concurrency= cannot be combined with algo=: concurrency= is an algorithm of its own; remove algo=, or put a rate limit on a //ratelimit: line of its own"},
		{"//ratelimit:algo=concurrency max=2 window=1s", "concurrency", "a limit of calls in flight is written concurrency=N (with lease=, not window= or max=), e.g. concurrency=2"},
		{"//ratelimit:concurrency=2 burst=4", "burst", "concurrency= cannot be combined with burst=: calls in flight have no burst; remove burst="},
		{"//ratelimit:concurrency=2 cost=len(items)", "cost", "concurrency= cannot be combined with cost=: each call in flight holds one permit; remove cost=, or put a cost on a rate limit on a //ratelimit: line of its own"},
		{"//ratelimit:concurrency=2 refund=err == nil", "refund", "concurrency= cannot be combined with refund=: a permit is always released when the call returns, or panics; remove refund=, or put it on a rate limit of the method"},
		{"//ratelimit:concurrency=2 settle=n", "settle", "concurrency= cannot be combined with settle=: a call in flight holds one permit whatever it did; remove settle=, or put it on a rate limit of the method"},
		{"//ratelimit:concurrency=2 wait=0s", "0s", `wait must be positive; got "0s" (omit wait= to deny at once)`},
		{"//ratelimit:concurrency=2 wait=soon", "soon", `wait "soon" is not a Go duration: write e.g. wait=2s or wait=500ms`},
		{"//ratelimit:window=1s max=2 lease=30s", "lease", "lease= applies only to concurrency=, the permit of a call in flight; a rate limit counts over window=: remove lease="},
		{"//ratelimit:concurrency=2 concurency=3", "concurency", `unknown option "concurency"; did you mean "concurrency"?`},
	} {
		_, errs := Line(tc.text, base)
		require.Len(t, errs, 1, tc.text)
		assert.Equal(t, tc.msg, errs[0].Msg, tc.text)
		assert.Equal(t, base.Column+strings.LastIndex(tc.text, tc.at), errs[0].Pos.Column, tc.text)
	}
}

func TestOutcomeErrors(t *testing.T) {
	for _, tc := range []struct{ text, at, msg string }{
		{"//ratelimit:window=1s max=3 settle=n, m", ",", `settle= takes an integer expression, not a list; remove the "," (key= is the option whose parts are separated by commas)`},
		{"//ratelimit:window=1s max=3 refund=err ==", "err", `refund "err ==" is not a Go expression: expected operand, found 'EOF'`},
	} {
		_, errs := Line(tc.text, base)
		require.Len(t, errs, 1, tc.text)
		assert.Equal(t, tc.msg, errs[0].Msg, tc.text)
		assert.Equal(t, base.Column+strings.Index(tc.text, tc.at), errs[0].Pos.Column, tc.text)
	}
}

func TestSuggest(t *testing.T) {
	for name, want := range map[string]string{
		"windw": "window", "widnow": "window", "windows": "window", "WINDOW": "window",
		"mx": "max", "maxx": "max", "Max": "max", "limit": "max",
		"ky": "key", "keys": "key", "nmae": "name", "names": "name",
		"interval": "window", "period": "window",
		"algorithm": "algo", "algp": "algo", "burts": "burst", "capacity": "burst",
		"cots": "cost", "weight": "cost",
		"mdoe": "mode", "modes": "mode", "dryrun": "mode", "DryRun": "mode", "shadow": "mode",
	} {
		got, ok := suggest(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"a", "x", "foo", "k", "m", "strategies", strings.Repeat("w", 100)} {
		got, ok := suggest(name)
		assert.False(t, ok, "%s suggested %s", name, got)
	}
}

func TestExempt(t *testing.T) {
	for _, text := range []string{"//ratelimit:exempt", "//ratelimit:exempt  "} {
		d, errs := Line(text, token.Position{Filename: "a.go", Line: 1, Column: 1})
		if len(errs) > 0 || d == nil || !d.Exempt || len(d.Options) > 0 {
			t.Errorf("Line(%q) = %+v, %v; want an exempt directive", text, d, errs)
		}
	}
	if d, errs := Line("//ratelimit:exempt window=1s", token.Position{}); len(errs) == 0 || d.Exempt {
		t.Errorf("exempt with options: %+v, %v; want errors and no exemption", d, errs)
	}
}

func TestWait(t *testing.T) {
	d, errs := Line("//ratelimit:window=1s max=10 wait=2s", token.Position{})
	require.Empty(t, errs)
	assert.Equal(t, 2*time.Second, d.Wait)
	// A call settled by its outcome, or holding a permit, waits too.
	for _, text := range []string{"//ratelimit:window=1s max=3 wait=2s refund=err == nil", "//ratelimit:window=1s max=3 settle=n wait=2s", "//ratelimit:concurrency=2 wait=2s"} {
		d, errs := Line(text, token.Position{})
		require.Empty(t, errs, text)
		assert.Equal(t, 2*time.Second, d.Wait, text)
	}
	for _, text := range []string{"//ratelimit:window=1s max=10 wait=soon", "//ratelimit:window=1s max=10 wait=0s", "//ratelimit:window=1s max=10 wait=-1s"} {
		d, errs := Line(text, token.Position{})
		assert.NotEmpty(t, errs, text)
		assert.Zero(t, d.Wait, text)
	}
}

func TestMode(t *testing.T) {
	for text, want := range map[string]runtime.Mode{
		"//ratelimit:window=1s max=10":              runtime.ModeEnforce,
		"//ratelimit:window=1s max=10 mode=enforce": runtime.ModeEnforce,
		"//ratelimit:window=1s max=10 mode=shadow":  runtime.ModeShadow,
		"//ratelimit:mode=shadow window=1s max=10":  runtime.ModeShadow,
	} {
		d, errs := Line(text, base)
		require.Empty(t, errs, text)
		assert.Equal(t, want, d.Mode, text)
	}
	for _, tt := range []struct{ text, at, msg string }{
		{"//ratelimit:window=1s max=10 mode=off", "off", "mode=off cannot be written in a directive: a disabled limit belongs in a run-time override, not in source; remove the directive to drop the limit, or write mode=shadow to count calls without denying any"},
		{"//ratelimit:window=1s max=10 mode=disabled", "disabled", "mode=disabled cannot be written in a directive: a disabled limit belongs in a run-time override, not in source; remove the directive to drop the limit, or write mode=shadow to count calls without denying any"},
		{"//ratelimit:window=1s max=10 mode=Shadow", "Shadow", `unknown mode "Shadow"; did you mean mode=shadow? The modes are enforce (the default) and shadow`},
		{"//ratelimit:window=1s max=10 mode=dry-run", "dry-run", `unknown mode "dry-run"; did you mean mode=shadow? The modes are enforce (the default) and shadow`},
		{"//ratelimit:window=1s max=10 mode=enforcd", "enforcd", `unknown mode "enforcd"; did you mean mode=enforce? The modes are enforce (the default) and shadow`},
		{`//ratelimit:window=1s max=10 mode="shadow"`, `"shadow"`, "write the mode without quotes: mode=shadow"},
		{"//ratelimit:window=1s max=10 mode=strict", "strict", `unknown mode "strict"; write mode=enforce (the default) or mode=shadow`},
		{"//ratelimit:window=1s max=10 mode=shadow mode=enforce", "mode=enforce", `duplicate option "mode"; it is already set at svc.go:12:31: remove one`},
		{"//ratelimit:window=1s max=10 mode", "mode", `option "mode" has no value; write mode=shadow`},
	} {
		d, errs := Line(tt.text, base)
		require.Len(t, errs, 1, tt.text)
		assert.Equal(t, tt.msg, errs[0].Msg, tt.text)
		assert.Equal(t, colOf(t, tt.text, tt.at, 0), errs[0].Pos.Column, tt.text)
		if tt.at != "mode=enforce" {
			assert.Equal(t, runtime.ModeEnforce, d.Mode, tt.text)
		}
	}
}

func TestMaxExpr(t *testing.T) {
	for _, tt := range []struct{ text, expr string }{
		{"//ratelimit:window=1s max=planLimit(ctx)", "planLimit(ctx)"},
		{"//ratelimit:max=req.Plan.Max window=1s", "req.Plan.Max"},
		{`//ratelimit:max=limits[req.Plan + " x"] window=1s key=req.ID`, `limits[req.Plan + " x"]`},
		{"//ratelimit:max=f(a, b) window=1s", "f(a, b)"},
		{"//ratelimit:max=maxPerMinute window=1s", "maxPerMinute"},
		{"//ratelimit:window=1s max=ten", "ten"}, // undefined, which the generator reports
		{"//ratelimit:window=1s max=2*defaultMax", "2*defaultMax"},
		{"//ratelimit:window=1s max=-planLimit(ctx)", "-planLimit(ctx)"}, // negative at run time: the limiter's error
	} {
		d, errs := Line(tt.text, base)
		require.Empty(t, errs, tt.text)
		require.NotNil(t, d.MaxExpr, tt.text)
		assert.Equal(t, tt.expr, d.MaxExpr.Text, tt.text)
		assert.Equal(t, colOf(t, tt.text, tt.expr, 0), d.MaxExpr.Pos.Column, tt.text)
		assert.Zero(t, d.Max, tt.text)
	}
	// A literal stays a literal, checked as before.
	d, errs := Line("//ratelimit:window=1s max=1_000", base)
	require.Empty(t, errs)
	assert.Equal(t, 1000, d.Max)
	assert.Nil(t, d.MaxExpr)
	for _, tt := range []struct{ text, at, msg string }{
		{"//ratelimit:window=1s max=0", "0", "max must be at least 1; got 0"},
		{"//ratelimit:window=1s max=-2", "-2", "max must be at least 1; got -2"},
		{"//ratelimit:window=1s max=10.5", "10.5", `max "10.5" is not a whole number; write e.g. max=10`},
		{"//ratelimit:window=1s max=0x10", "0x10", `max "0x10" is not a whole number; write e.g. max=10`},
		{`//ratelimit:window=1s max="10"`, `"10"`, `max "\"10\"" is not a whole number; write e.g. max=10`},
		{"//ratelimit:window=1s max=3 =4", "3 =4", `max "3 =4" is not a whole number; write e.g. max=10`},
		{"//ratelimit:window=1s max=f(a,b", "(", `"(" in max= is not closed; close it with ")"`},
		{"//ratelimit:window=1s max=a,b", ",", `max= takes one integer expression, not a list; remove the "," (key= is the option whose parts are separated by commas)`},
		{"//ratelimit:window=1s max=a+", "a+", `max "a+" is not a Go expression: expected operand, found 'EOF'`},
		{"//ratelimit:window=1s max=plan(ctx) foo", "plan", `max "plan(ctx) foo" is not a Go expression: expected 'EOF', found foo`},
	} {
		d, errs := Line(tt.text, base)
		require.Len(t, errs, 1, tt.text)
		assert.Equal(t, tt.msg, errs[0].Msg, tt.text)
		assert.Equal(t, colOf(t, tt.text, tt.at, 0), errs[0].Pos.Column, tt.text)
		assert.Nil(t, d.MaxExpr, tt.text)
	}
}

func TestLineCalendar(t *testing.T) {
	tests := []struct {
		text string
		want runtime.Calendar
		algo runtime.Algorithm
	}{
		{"//ratelimit:window=1d max=50", runtime.Calendar{Period: runtime.Day}, runtime.FixedWindow},
		{"//ratelimit:window=1w max=50 tz=America/New_York", runtime.Calendar{Period: runtime.Week, Zone: "America/New_York"}, runtime.FixedWindow},
		{"//ratelimit:tz=Europe/Berlin window=1mo max=1_000", runtime.Calendar{Period: runtime.Month, Zone: "Europe/Berlin"}, runtime.FixedWindow},
		{"//ratelimit:window=1y max=5 algo=fixed-window tz=UTC", runtime.Calendar{Period: runtime.Year, Zone: "UTC"}, runtime.FixedWindow},
		{"//ratelimit:window=1m max=5", runtime.Calendar{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			d, errs := Line(tt.text, base)
			require.Nil(t, errs)
			assert.Equal(t, tt.want, d.Calendar)
			assert.Equal(t, tt.algo, d.Algorithm)
			if tt.want.Period != 0 {
				assert.Zero(t, d.Window)
				l := runtime.Limit{Name: "x", Max: d.Max, Algorithm: d.Algorithm, Calendar: d.Calendar}
				assert.NoError(t, l.Validate())
			}
		})
	}
	for _, p := range []runtime.Period{runtime.Day, runtime.Week, runtime.Month, runtime.Year} {
		got, ok := CalendarWindow(CalendarSpelling(p))
		assert.True(t, ok)
		assert.Equal(t, p, got)
	}
	for _, s := range []string{"2d", "1h", "d", "1", "1mon", ""} {
		_, ok := CalendarWindow(s)
		assert.False(t, ok, s)
	}
}
