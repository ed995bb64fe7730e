package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type slots struct{}

func (slots) Book(context.Context, time.Time) error             { return nil }
func (slots) BookRoom(context.Context, string, time.Time) error { return nil }

// One instant is one key, whatever its location and whether it carries a
// monotonic clock reading; the next nanosecond is another.
func exerciseTimes(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	s := NewRateLimitedSlots(slots{}, lim)
	at := time.Now() // with a monotonic reading
	same := []time.Time{at.Round(0), at.In(time.FixedZone("UTC+5", 5*3600)), at.UTC()}

	if err := s.Book(ctx, at); err != nil {
		t.Fatalf("first booking: %v", err)
	}
	for _, tt := range same {
		if err := s.Book(ctx, tt); !errors.Is(err, runtime.ErrLimited) {
			t.Fatalf("booking %v, the same instant: got %v, want a denial", tt, err)
		}
	}
	if err := s.Book(ctx, at.Add(time.Nanosecond)); err != nil {
		t.Fatalf("booking the next nanosecond: %v", err)
	}

	if err := s.BookRoom(ctx, "a", same[1]); err != nil {
		t.Fatalf("first room booking: %v", err)
	}
	if err := s.BookRoom(ctx, "a", at); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("booking room a at the same instant: got %v, want a denial", err)
	}
	if err := s.BookRoom(ctx, "b", at); err != nil {
		t.Fatalf("booking room b: %v", err)
	}
}

func TestTimesMemory(t *testing.T) {
	exerciseTimes(t, memlimit.New())
}

func TestTimesRedis(t *testing.T) {
	exerciseTimes(t, newRedisLimiter(t))
}
