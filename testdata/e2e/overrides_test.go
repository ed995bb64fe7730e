package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/testmod/e2e/orders"
)

type exports struct{ n int }

func (e *exports) Run(context.Context, string) error { e.n++; return nil }

// TestOverridesOfGeneratedLimits: told the generated RateLimits(), the
// overrides refuse a file that would break a limit, including one that
// leaves no room for the constant cost its calls use, and name what
// matches no limit.
func TestOverridesOfGeneratedLimits(t *testing.T) {
	const run = "github.com/ratelimitgen/ratelimitgen/testmod/e2e.Exports.Run"
	i := slices.IndexFunc(RateLimits(), func(r runtime.Request) bool { return r.Limit.Name == run })
	if i < 0 || RateLimits()[i].Cost != exportCost {
		t.Fatalf("RateLimits() has no %s at a cost of %d: %+v", run, exportCost, RateLimits())
	}
	var ov runtime.Overrides
	if err := ov.AddLimits(slices.Concat(RateLimits(), orders.RateLimits())...); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "overrides.json")
	load := func(contents string) error {
		t.Helper()
		if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
		return ov.LoadFile(path)
	}
	for file, want := range map[string]string{
		`{"limits": {"` + run + `": {"max": 3}}}`:             `cannot admit a cost of 4`,
		`{"limits": {"` + run + `": {"window": "2000000h"}}}`: `Window 2000000h0m0s times Burst 12 is too large`,
	} {
		if err := load(file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a refusal with %q", file, err, want)
		}
	}
	if err := load(`{"limits": {"` + run + `": {"max": 8}, "Exports.Run": {"mode": "off"}, "github.com/ratelimitgen/ratelimitgen/testmod/e2e/orders.Service.Get": {"max": 5}}}`); err != nil {
		t.Fatal(err)
	}
	if got := ov.Unmatched(); !slices.Equal(got, []string{"Exports.Run"}) {
		t.Errorf("Unmatched() = %q, want the name without its package path alone", got)
	}

	lim := runtime.Operate(memlimit.New(), runtime.WithOverrides(&ov))
	e := NewRateLimitedExports(&exports{}, lim)
	ctx := context.Background()
	for n := range 2 {
		if err := e.Run(ctx, "acme"); err != nil {
			t.Fatalf("export %d of 2 under a Max of 8: %v", n+1, err)
		}
	}
	if err := e.Run(ctx, "acme"); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("3rd export: got %v, want a denial", err)
	}
}
