package generate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Verify catches a wrapper whose limit has another calendar window than
// its directive's, or a duration window in place of it.
func TestVerifyCatchesAnotherCalendar(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, env := newTestModule(t, repo)
	c := goldenCase{name: "calendar", src: filepath.Join(repo, "testdata", "calendar"), dir: filepath.Join(mod, "calendar")}
	copyCase(t, c)
	cfg := Config{Dir: mod, Env: env}
	res := generateOK(t, cfg, "./calendar")
	if err := Write(res.Files); err != nil {
		t.Fatal(err)
	}
	if err := Verify(context.Background(), cfg, "./calendar"); err != nil {
		t.Fatalf("Verify of the generated wrappers: %v", err)
	}
	path := filepath.Join(c.dir, DefaultOutput)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for _, edit := range [][2]string{
		{`Zone: "Europe/Berlin"`, `Zone: "Europe/Paris"`},
		{`Max: 1000, Algorithm: runtime.FixedWindow, Calendar: runtime.Calendar{Period: runtime.Month}`, `Window: 720 * time.Hour, Max: 1000, Algorithm: runtime.FixedWindow`},
	} {
		if !strings.Contains(src, edit[0]) {
			t.Fatalf("no %s in:\n%s", edit[0], src)
		}
		src = strings.Replace(src, edit[0], edit[1], 1)
	}
	writeFile(t, path, []byte(src))
	got := verifyErrors(t, cfg, "./calendar")
	for _, want := range []string{
		`"github.com/ratelimitgen/ratelimitgen/testmod/calendar.Messenger.SendSMS" with window day in Europe/Paris and max 50; the directive at calendar/quotas.go:12:2 says window day in Europe/Berlin and max 50`,
		`"github.com/ratelimitgen/ratelimitgen/testmod/calendar.Exports.Run" with window 720h and max 1000; the directive at calendar/quotas.go:25:2 says window month in UTC and max 1000`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Verify:\n%s\nlacks %q", got, want)
		}
	}
}
