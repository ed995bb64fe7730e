package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// guard is a Guard whose answers the test sets, and which panics when
// told to.
type guard struct {
	wrong, fail, cached, panics bool
	used, retries               int
}

func (g *guard) Verify(context.Context, string, string) error {
	if g.wrong {
		return ErrWrongCode
	}
	return nil
}

func (g *guard) Login(context.Context, string) (string, error) {
	if g.fail {
		return "", errors.New("no such user")
	}
	return "session", nil
}

func (g *guard) Complete(context.Context, string, int) (*Answer, error) {
	if g.panics {
		panic("the model broke")
	}
	if g.fail {
		// A nil answer with an error: settle= is not evaluated.
		return nil, errors.New("model unavailable")
	}
	return &Answer{Text: "ok", Usage: &Tokens{Total: g.used}}, nil
}

func (g *guard) Fetch(context.Context, string) (int, bool, error) { return 1, g.cached, nil }

func (g *guard) Retry(context.Context, string) error {
	g.retries++
	if g.fail {
		return errors.New("upstream unavailable")
	}
	return nil
}

// exerciseOutcome checks that generated wrappers count what their calls
// did: only wrong codes and failed logins, a completion's tokens as used,
// a reservation kept when the call errs or panics.
func exerciseOutcome(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	g := &guard{}
	w := NewRateLimitedGuard(g, lim)

	// Right codes never count; three wrong ones do, and then even a right
	// one is denied.
	for range 10 {
		if err := w.Verify(ctx, "ann", "123"); err != nil {
			t.Fatalf("a right code: %v", err)
		}
	}
	g.wrong = true
	for n := range 3 {
		if err := w.Verify(ctx, "ann", "000"); !errors.Is(err, ErrWrongCode) {
			t.Fatalf("wrong code %d: got %v, want ErrWrongCode", n+1, err)
		}
	}
	g.wrong = false
	if err := w.Verify(ctx, "ann", "123"); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("a right code after 3 wrong ones: got %v, want a denial", err)
	}

	// Named results: successes give back, failures count.
	for range 5 {
		if s, err := w.Login(ctx, "bob"); err != nil || s != "session" {
			t.Fatalf("a login: %q, %v", s, err)
		}
	}
	g.fail = true
	for range 2 {
		if _, err := w.Login(ctx, "bob"); err == nil || errors.Is(err, runtime.ErrLimited) {
			t.Fatalf("a failed login: got %v, want its own error", err)
		}
	}
	if _, err := w.Login(ctx, "bob"); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("a login after 2 failures: got %v, want a denial", err)
	}
	g.fail = false

	// Completions reserve 60 of 100 and count what they used: 10, 10,
	// then 70, which goes past the reservation and is charged in full.
	g.used = 10
	for n := range 2 {
		if _, err := w.Complete(ctx, "cy", 60); err != nil {
			t.Fatalf("completion %d: %v", n+1, err)
		}
	}
	g.used = 70
	if _, err := w.Complete(ctx, "cy", 60); err != nil {
		t.Fatalf("completion 3 (20 used, 60 reserved): %v", err)
	}
	// 90 used: a reservation of 20 does not fit, one of 10 does.
	if _, err := w.Complete(ctx, "cy", 20); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("a completion of 20 with 90 of 100 used: got %v, want a denial", err)
	}
	// A call that errs keeps its reservation: nil answer, no panic.
	g.fail = true
	if _, err := w.Complete(ctx, "cy", 10); err == nil || errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("a failing completion: got %v, want its own error", err)
	}
	g.fail = false
	if _, err := w.Complete(ctx, "cy", 1); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("a completion after the failed one kept its 10: got %v, want a denial", err)
	}

	// A panicking call keeps its reservation too.
	g.panics = true
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the wrapped panic did not reach the caller")
			}
		}()
		_, _ = w.Complete(ctx, "dee", 100)
	}()
	g.panics = false
	if _, err := w.Complete(ctx, "dee", 1); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("a completion after a panic that held 100: got %v, want a denial", err)
	}

	// Two limits, one given back when cached: the second counts every call.
	g.cached = true
	for n := range 3 {
		if _, _, err := w.Fetch(ctx, "eve"); err != nil {
			t.Fatalf("cached fetch %d: %v", n+1, err)
		}
	}
	_, _, err := w.Fetch(ctx, "eve")
	var le *runtime.LimitError
	if !errors.As(err, &le) || le.Limit.Name != "Guard.Fetch.all" {
		t.Fatalf("a 4th fetch: got %v, want a denial by Guard.Fetch.all", err)
	}

	// refund= with wait=: successes give back and never fill the window;
	// each failure fills it, and the next call waits for the room (50ms)
	// and runs, rather than be denied.
	for n := range 5 {
		if err := w.Retry(ctx, "fay"); err != nil {
			t.Fatalf("retry %d, which succeeds: %v", n+1, err)
		}
	}
	g.fail = true
	for n := range 3 {
		if err := w.Retry(ctx, "fay"); err == nil || errors.Is(err, runtime.ErrLimited) {
			t.Fatalf("failing retry %d, which waits for the room its predecessor took: got %v, want its own error", n+1, err)
		}
	}
	g.fail = false
	if err := w.Retry(ctx, "fay"); err != nil {
		t.Fatalf("a retry after 3 failures, which waits for the room: %v", err)
	}
	if g.retries != 9 {
		t.Fatalf("Retry ran %d times; want 9, every call", g.retries)
	}
}

func TestOutcomeMemory(t *testing.T) {
	exerciseOutcome(t, memlimit.New())
}

func TestOutcomeRedis(t *testing.T) {
	exerciseOutcome(t, newRedisLimiter(t))
}
