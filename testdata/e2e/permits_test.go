package e2e

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// renderer is a Renderer whose calls block until the test lets them go,
// and which counts the calls in flight.
type renderer struct {
	started chan context.Context // each call's context, once it runs
	release chan struct{}        // a receive lets one call return
	panics  atomic.Bool

	inFlight, most atomic.Int32
}

func newRenderer() *renderer {
	return &renderer{started: make(chan context.Context, 16), release: make(chan struct{})}
}

func (r *renderer) Render(ctx context.Context, _ string) (int, error) {
	n := r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	for m := r.most.Load(); n > m && !r.most.CompareAndSwap(m, n); m = r.most.Load() {
	}
	r.started <- ctx
	if r.panics.Load() {
		panic("the renderer broke")
	}
	select {
	case <-r.release:
		return 1, nil
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}

// render calls w.Render in a goroutine, and returns the channel of its
// error, a panic recovered as errPanicked.
func render(w Renderer, tenant string) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if recover() != nil {
				done <- errPanicked
			}
		}()
		_, err := w.Render(context.Background(), tenant)
		done <- err
	}()
	return done
}

var errPanicked = errors.New("the call panicked")

// waitStarted waits for a call of r to run, and returns its context.
func (r *renderer) waitStarted(t *testing.T) context.Context {
	t.Helper()
	select {
	case ctx := <-r.started:
		return ctx
	case <-time.After(10 * time.Second):
		t.Fatal("no call started")
		return nil
	}
}

// wait waits for the call of done to return, and returns its error.
func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return")
		return nil
	}
}

// TestConcurrencyMemory needs memlimit's Concurrency: at most 2 calls of a
// tenant run at once, a panicking call releases its permit, and a call
// whose permit is lost (a Reset of its key) sees ErrPermitLost as the
// cause of its context.
func TestConcurrencyMemory(t *testing.T) {
	lim := memlimit.New()
	r := newRenderer()
	w := NewRateLimitedRenderer(r, lim)

	// Two calls hold the tenant's permits; a third is denied, another
	// tenant's is not.
	first, second := render(w, "ann"), render(w, "ann")
	r.waitStarted(t)
	r.waitStarted(t)
	for range 3 {
		if _, err := w.Render(context.Background(), "ann"); !errors.Is(err, runtime.ErrLimited) {
			t.Fatalf("a third call in flight: got %v, want a denial", err)
		}
	}
	other := render(w, "bob")
	r.waitStarted(t)
	r.release <- struct{}{}
	r.release <- struct{}{}
	r.release <- struct{}{}
	for _, done := range []<-chan error{first, second, other} {
		if err := wait(t, done); err != nil {
			t.Fatalf("a call in flight: %v", err)
		}
	}
	if m := r.most.Load(); m != 3 {
		t.Fatalf("%d calls ran at once; want 3, 2 of ann's and bob's", m)
	}

	// A call that panics releases its permit: two calls run after it.
	r.panics.Store(true)
	if err := wait(t, render(w, "ann")); !errors.Is(err, errPanicked) {
		t.Fatalf("a panicking call: got %v", err)
	}
	r.waitStarted(t)
	r.panics.Store(false)
	first, second = render(w, "ann"), render(w, "ann")
	r.waitStarted(t)
	r.waitStarted(t)
	r.release <- struct{}{}
	r.release <- struct{}{}
	for _, done := range []<-chan error{first, second} {
		if err := wait(t, done); err != nil {
			t.Fatalf("a call after a panic: %v", err)
		}
	}

	// A permit the store loses ends its call's context, with
	// ErrPermitLost as its cause, and frees the permit for another call.
	done := render(w, "cy")
	ctx := r.waitStarted(t)
	if err := lim.Reset(context.Background(), runtime.Request{Limit: limitRendererRender, Key: "cy"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the call's context was not cancelled once its permit was lost")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, runtime.ErrPermitLost) {
		t.Fatalf("the call's context ended with cause %v; want ErrPermitLost", cause)
	}
	if err := wait(t, done); !errors.Is(err, runtime.ErrPermitLost) {
		t.Fatalf("the call returned %v; want ErrPermitLost", err)
	}
	first, second = render(w, "cy"), render(w, "cy")
	r.waitStarted(t)
	r.waitStarted(t)
	r.release <- struct{}{}
	r.release <- struct{}{}
	for _, done := range []<-chan error{first, second} {
		if err := wait(t, done); err != nil {
			t.Fatalf("a call after a permit was lost: %v", err)
		}
	}
}

// TestConcurrencyPermitLost needs no backend's Concurrency: a limiter
// whose permits are lost at their first renewal shows that the wrapped
// method runs in Keep's context, which ends with ErrPermitLost as cause,
// and that the permit is settled once, with the reservations, the call's
// failure refunding its rate limit.
func TestConcurrencyPermitLost(t *testing.T) {
	lim := &losingLimiter{}
	r := newRenderer()
	w := NewRateLimitedRenderer(r, lim)
	done := render(w, "ann")
	ctx := r.waitStarted(t)
	if err := wait(t, done); !errors.Is(err, runtime.ErrPermitLost) {
		t.Fatalf("the call returned %v; want ErrPermitLost", err)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, runtime.ErrPermitLost) {
		t.Fatalf("the call's context ended with cause %v; want ErrPermitLost", cause)
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if len(lim.settled) != 1 || len(lim.settled[0]) != 2 || lim.settled[0][0] != 1 || lim.settled[0][1] != 0 {
		t.Fatalf("settled %v; want once, at [1 0]: the permit, and the failed call's rate limit given back", lim.settled)
	}
}

// losingLimiter admits every call with a permit that its first renewal
// finds gone, and records the settlements.
type losingLimiter struct {
	mu      sync.Mutex
	settled [][]int64
}

func (l *losingLimiter) Decide(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(reqs))}, nil
}

func (l *losingLimiter) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	ds, _ := l.Decide(ctx, reqs...)
	return ds, &losingPermit{l: l, until: time.Now().Add(time.Second)}, nil
}

type losingPermit struct {
	l     *losingLimiter
	until time.Time
}

func (p *losingPermit) Renew(context.Context) error { return runtime.ErrPermitLost }
func (p *losingPermit) HeldUntil() time.Time        { return p.until }

func (p *losingPermit) Settle(_ context.Context, used ...int64) error {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	p.l.settled = append(p.l.settled, used)
	return nil
}
