package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

type exporter struct{ runs int }

func (e *exporter) Export(context.Context, string) error { e.runs++; return nil }

// TestCalendarQuotaMemory and TestCalendarQuotaRedis run a generated
// method with window=1d tz=Europe/Berlin across the day daylight-saving
// time begins there (23 hours): the third call of the day is denied until
// Berlin's midnight, with the time to it as its RetryAfter.
func TestCalendarQuotaMemory(t *testing.T) {
	clock := newClock()
	exerciseQuota(t, memlimit.New(memlimit.WithClock(clock.Now)), clock)
}

func TestCalendarQuotaRedis(t *testing.T) {
	clock := newClock()
	lim := redislimit.New(redistest.StartServer(t).Client(t), redislimit.WithFailurePolicy(redislimit.FailClosed),
		redislimit.WithTimeout(10*time.Second), redislimit.WithClock(clock.Now))
	exerciseQuota(t, lim, clock)
}

func exerciseQuota(t *testing.T, lim runtime.Limiter, clock *clock) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	clock.mu.Lock()
	clock.now = time.Date(2026, 3, 29, 10, 0, 0, 0, berlin)
	clock.mu.Unlock()
	e := &exporter{}
	w := NewRateLimitedExporter(e, lim)
	ctx := context.Background()
	for i := range 2 {
		if err := w.Export(ctx, "acme"); err != nil {
			t.Fatalf("export %d: %v", i+1, err)
		}
	}
	err = w.Export(ctx, "acme")
	var le *runtime.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("a third export the same day: got %v, want a *runtime.LimitError", err)
	}
	// From 10:00 (CEST, after the change at 02:00) to midnight.
	if want := 14 * time.Hour; le.Decision.RetryAfter != want {
		t.Fatalf("RetryAfter %v, want %v: the time to Berlin's midnight", le.Decision.RetryAfter, want)
	}
	clock.Advance(14*time.Hour - time.Microsecond)
	if err := w.Export(ctx, "acme"); !errors.As(err, &le) {
		t.Fatalf("a µs before midnight: got %v, want a denial", err)
	}
	clock.Advance(time.Microsecond)
	if err := w.Export(ctx, "acme"); err != nil {
		t.Fatalf("at midnight, a new day: %v", err)
	}
	if e.runs != 3 {
		t.Fatalf("Export ran %d times, want 3", e.runs)
	}
}
