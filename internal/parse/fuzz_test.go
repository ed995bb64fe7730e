package parse

import (
	goparser "go/parser"
	"go/token"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// fuzzSeeds are directive bodies (what follows the prefix) and whole
// comments that exercise every branch of the grammar.
var fuzzSeeds = []string{
	"key=req.Email window=60s max=3",
	"max=3 name=Notifier.SendCode window=1m key=req.Email",
	"window=1h30m\t\tmax=1_000_000   name=sendcode-per-email  ",
	"key=req.Tenant, strings.ToLower(req.Email),f(a, b) window=60s max=3",
	`key=user.Tenant + "/" + name window=60s max=3`,
	"key=fmt.Sprint(\"a, b\", ',', `c d=e`), \"window=1s max=9\" window=1s max=1",
	`key='\'', "\" max=2", x max=1 window=1s`,
	`key=f[T](x), Pair[K, V]{k, v}.String(), m["k v"], s[1:2] window=1s max=2`,
	"key=a == b, cond(x == y) window=1s max=1",
	"key=func() string { s := a; s = b; return s }() window=1s max=1",
	"key=req.Tenant, name, max window=1s max=1",
	"key=req.Email window max=3",
	"key:req.Email window=1s max=3",
	"key=a,,b windw=1 max=0 algo=x name=\"n\" wait",
	"key=f(x window=1s max=1",
	"key=\"abc window=1s max=1",
	"key=`abc window=1s max=1",
	"key=a window=1s max=1 // three a second",
	"key=f(a /* x */) window=1s max=1",
	"window =60s max= 3",
	"window=1d max=010",
	"window=1mo tz=Europe/Berlin max=1000",
	"window=2mo tz=Nowhere/Else max=1 algo=gcra",
	"window=1w max=3 burst=2 tz=UTC",
	"window=1500ns max=2147483648",
	"name=a\u00a0b name=\xff window=-1s max=-1",
	" key=a window=1s max=1",
	"",
	"\n",
	"key=a\nwindow=1s\nmax=1",
	"key=\n",
	"// ratelimit:key=a window=1s max=1",
	"//rateLimit:key=a",
	"// +ratelimit:key=a",
	"/*ratelimit:key=a*/",
	"//ratelimit",
	"//ratelimiter := New()",
	"key=req.Email window=1s max=50 algo=token-bucket burst=100",
	"burst=1_000 algo=gcra window=1m max=10",
	"window=1m max=10 algo=sliding-window",
	"window=1m max=200 algo=fixed-window name=x",
	"window=1s max=3 burst=5",
	"window=1s max=3 algo=token_bucket burst=0",
	"window=1s max=3 algo=\"gcra\" burst=-2",
	"window=1s max=3 algo=leaky-bucket",
	"key=req.Tenant cost=len(req.Items) window=1m max=100",
	"window=1m max=100 cost=weight(req, \"a b\", []int{1, 2}) + 1",
	"window=1s max=3 cost=len(a), 2",
	"window=1s max=3 cost=len(a",
	"cost window=1s max=3 algo",
	"key=req.Tenant window=1m max=3 mode=shadow",
	"window=1s max=3 mode=off",
	"window=1s max=3 mode=\"shadow\"",
	"key=req.Tenant window=1m max=planLimit(ctx, \"a b\")",
	"window=1s max=req.Plan.Max*2 algo=gcra",
	"key=req.TenantID concurrency=2 lease=10s",
	"window=1s max=a, b",
}

// fuzzBase is where fuzzed comments start.
var fuzzBase = token.Position{Filename: "f.go", Offset: 1000, Line: 40, Column: 5}

// FuzzLine checks, on any input, that Line and NearMiss do not panic, that
// every position they report is a real byte of the comment, that a
// directive comes back exactly when the text starts with Prefix, and that a
// directive without errors holds only valid values.
func FuzzLine(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, text := range []string{s, Prefix + s} {
			checkLine(t, text)
			checkNearMiss(t, text)
		}
		checkNearMiss(t, "//"+s)
		checkNearMiss(t, "// "+s)
	})
}

func checkLine(t *testing.T, text string) {
	d, errs := Line(text, fuzzBase)
	if (d != nil) != strings.HasPrefix(text, Prefix) {
		t.Fatalf("Line(%q) returned directive %v", text, d)
	}
	if d == nil {
		if errs != nil {
			t.Fatalf("Line(%q) returned errors without a directive: %v", text, errs)
		}
		return
	}
	if errs != nil && len(errs) == 0 {
		t.Fatalf("Line(%q) returned an empty, non-nil error slice", text)
	}
	for _, e := range errs {
		checkPos(t, text, e.Pos, "error "+e.Msg)
		if e.Msg == "" {
			t.Fatalf("Line(%q) returned an error without a message", text)
		}
	}
	checkPos(t, text, d.Pos, "directive")
	for _, k := range d.Key {
		off := checkPos(t, text, k.Pos, "key part "+k.Text)
		if !strings.HasPrefix(text[off:], k.Text) || k.Text == "" {
			t.Fatalf("Line(%q): key part %q is not at its position", text, k.Text)
		}
		if _, err := goparser.ParseExpr(k.Text); err != nil {
			t.Fatalf("Line(%q): key part %q is kept but does not parse: %v", text, k.Text, err)
		}
	}
	for what, e := range map[string]*Expr{"cost": d.Cost, "max": d.MaxExpr} {
		if e == nil {
			continue
		}
		off := checkPos(t, text, e.Pos, what+" "+e.Text)
		if !strings.HasPrefix(text[off:], e.Text) || e.Text == "" {
			t.Fatalf("Line(%q): %s %q is not at its position", text, what, e.Text)
		}
		if _, err := goparser.ParseExpr(e.Text); err != nil {
			t.Fatalf("Line(%q): %s %q is kept but does not parse: %v", text, what, e.Text, err)
		}
	}
	for _, o := range d.Options {
		off := checkPos(t, text, o.NamePos, "option "+o.Name)
		if !strings.HasPrefix(text[off:], o.Name) {
			t.Fatalf("Line(%q): option %q is not at its position", text, o.Name)
		}
		if voff := o.ValuePos.Offset - fuzzBase.Offset; voff < off || voff > len(text) || !strings.HasPrefix(text[voff:], o.Value) {
			t.Fatalf("Line(%q): value %q of option %q is not at its position", text, o.Value, o.Name)
		}
	}
	if errs == nil {
		if d.Calendar.Period != 0 {
			if d.Window != 0 || d.Algorithm != runtime.FixedWindow || (runtime.Limit{Name: "x", Max: 1, Algorithm: d.Algorithm, Calendar: d.Calendar}).Validate() != nil {
				t.Fatalf("Line(%q): no errors but calendar %v, window %v, algorithm %q", text, d.Calendar, d.Window, d.Algorithm)
			}
		} else if d.Window < time.Microsecond || d.Window%time.Microsecond != 0 || d.Calendar.Zone != "" {
			t.Fatalf("Line(%q): no errors but window %v", text, d.Window)
		}
		if (d.MaxExpr == nil) == (d.Max < 1 || d.Max > math.MaxInt32) || d.MaxExpr != nil && d.Max != 0 {
			t.Fatalf("Line(%q): no errors but max %d, max expression %v", text, d.Max, d.MaxExpr)
		}
		if _, ok := d.Lookup("mode"); d.Mode != runtime.ModeEnforce && (d.Mode != runtime.ModeShadow || !ok) {
			t.Fatalf("Line(%q): no errors but mode %v", text, d.Mode)
		}
		if _, ok := d.Lookup("name"); ok && (d.Name == "" || strings.ContainsAny(d.Name, " \t\n")) {
			t.Fatalf("Line(%q): no errors but name %q", text, d.Name)
		}
		if _, ok := d.Lookup("concurrency"); ok {
			if d.Algorithm != runtime.Concurrency || d.Window < MinLease || d.Window > MaxLease {
				t.Fatalf("Line(%q): no errors but a concurrency directive of algorithm %q, lease %v", text, d.Algorithm, d.Window)
			}
		} else if _, ok := d.Lookup("algo"); ok != (d.Algorithm != "") && d.Calendar.Period == 0 || ok && !slices.Contains(runtime.Algorithms(), d.Algorithm) {
			t.Fatalf("Line(%q): no errors but algorithm %q", text, d.Algorithm)
		}
		if _, ok := d.Lookup("burst"); ok != (d.Burst != 0) || ok && (d.Burst < 1 || d.Burst > math.MaxInt32 || !BurstApplies(d.Algorithm)) {
			t.Fatalf("Line(%q): no errors but burst %d with algorithm %q", text, d.Burst, d.Algorithm)
		}
		if _, ok := d.Lookup("cost"); ok != (d.Cost != nil) {
			t.Fatalf("Line(%q): no errors but cost %v", text, d.Cost)
		}
	}
}

func checkNearMiss(t *testing.T, text string) {
	e := NearMiss(text, fuzzBase)
	if e == nil {
		return
	}
	if strings.HasPrefix(text, Prefix) {
		t.Fatalf("NearMiss(%q) reported a real directive: %v", text, e)
	}
	if !strings.HasPrefix(e.Msg, "comment looks like a "+Prefix) {
		t.Fatalf("NearMiss(%q) = %q", text, e.Msg)
	}
	checkPos(t, text, e.Pos, "near miss")
}

// checkPos fails unless p is the position of a byte of text, other than a
// line break, as placed by fuzzBase; it returns the byte's offset in text.
func checkPos(t *testing.T, text string, p token.Position, what string) int {
	t.Helper()
	off := p.Offset - fuzzBase.Offset
	if p.Filename != fuzzBase.Filename || p.Line < 1 || p.Column < 1 || off < 0 || off >= len(text) || text[off] == '\n' {
		t.Fatalf("%q: %s at %+v, not on a byte of the comment", text, what, p)
	}
	line, col := fuzzBase.Line, fuzzBase.Column+off
	if nl := strings.LastIndexByte(text[:off], '\n'); nl >= 0 {
		line += strings.Count(text[:off], "\n")
		col = off - nl
	}
	if p.Line != line || p.Column != col {
		t.Fatalf("%q: %s at %d:%d, but its offset is that of %d:%d", text, what, p.Line, p.Column, line, col)
	}
	return off
}
