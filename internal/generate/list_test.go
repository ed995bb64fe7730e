package generate

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestManifest lists the limits of the maxexpr, outcome, concurrency and
// calendar cases, as
// ratelimitgen -list prints them, and compares both formats with each
// case's golden files. The JSON must read back into the fields it
// documents.
func TestManifest(t *testing.T) {
	for _, name := range []string{"maxexpr", "outcome", "concurrency", "calendar"} {
		t.Run(name, func(t *testing.T) { testManifest(t, name) })
	}
}

func testManifest(t *testing.T, name string) {
	c, mod, man, err := listCase(t, name)
	if err != nil {
		var list ErrorList
		if errors.As(err, &list) {
			t.Fatalf("List failed:\n%s", list.Format(mod))
		}
		t.Fatal(err)
	}
	compareGolden(t, c.want("manifest.txt"), man.Text(mod))
	js, err := man.JSON(mod)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, c.want("manifest.json"), js)

	var back []map[string]any
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(man.Entries) {
		t.Fatalf("the JSON has %d entries; want %d", len(back), len(man.Entries))
	}
	known := map[string]bool{"name": true, "window": true, "max": true, "max_expr": true, "algorithm": true, "burst": true, "mode": true, "key": true, "cost": true, "wait": true, "refund": true, "settle": true, "file": true, "line": true, "concurrency": true, "lease": true, "period": true, "zone": true}
	for i, obj := range back {
		for field := range obj {
			if !known[field] {
				t.Errorf("entry %d has the undocumented field %q", i, field)
			}
		}
		switch {
		case obj["algorithm"] == "concurrency":
			if obj["concurrency"] == nil || obj["lease"] == nil || obj["window"] != nil || obj["max"] != nil {
				t.Errorf("entry %d, of calls in flight, has not concurrency and lease in place of window and max", i)
			}
		case (obj["period"] == nil) != (obj["zone"] == nil):
			t.Errorf("entry %d has one of period and zone without the other", i)
		case obj["period"] != nil && obj["algorithm"] != "fixed-window":
			t.Errorf("entry %d has a calendar window and algorithm %v", i, obj["algorithm"])
		case obj["max"] == nil && obj["max_expr"] == nil:
			t.Errorf("entry %d has neither max nor max_expr", i)
		}
	}
}

// A manifest of sources with problems is the same ErrorList as Generate's.
func TestManifestErrors(t *testing.T) {
	c, _, man, err := listCase(t, "errmax")
	var list ErrorList
	if !errors.As(err, &list) || man == nil || len(man.Entries) != 0 {
		t.Fatalf("List = %v, %v; want no entries and an ErrorList", man, err)
	}
	compareGolden(t, c.want("errors.txt"), formatDiagnostics(c, list))
}

// listCase copies the testdata case called name into a new module and
// lists its limits.
func listCase(t *testing.T, name string) (goldenCase, string, *Manifest, error) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, env := newTestModule(t, repo)
	c := goldenCase{name: name, src: filepath.Join(repo, "testdata", name), dir: filepath.Join(mod, name)}
	copyCase(t, c)
	man, err := List(context.Background(), Config{Dir: mod, Env: env}, "./"+name+"/...")
	return c, mod, man, err
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", 24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s",
		time.Hour + time.Second: "1h0m1s", 500 * time.Millisecond: "500ms", time.Second: "1s", 10 * time.Microsecond: "10µs",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
