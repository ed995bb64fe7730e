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

// printer is a Printer whose calls block until the test lets them go, and
// which counts its calls and the most in flight.
type printer struct {
	started chan string   // each call's tenant, once it runs
	release chan struct{} // a receive lets one call return

	runs, inFlight, most atomic.Int32
}

func newPrinter() *printer {
	return &printer{started: make(chan string, 16), release: make(chan struct{})}
}

func (p *printer) Print(ctx context.Context, tenant string) error {
	p.runs.Add(1)
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	p.started <- tenant
	select {
	case <-p.release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// printDoc calls w.Print in a goroutine, and returns the channel of its
// error.
func printDoc(ctx context.Context, w Printer, tenant string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- w.Print(ctx, tenant) }()
	return done
}

// waitStarted waits for a call of p to run.
func (p *printer) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-p.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no call started")
	}
}

// waiting checks that the call of done neither runs nor returns for a
// while: it waits for a permit.
func (p *printer) waiting(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case tenant := <-p.started:
		t.Fatalf("%s ran (for %s) while the permit was held", what, tenant)
	case err := <-done:
		t.Fatalf("%s returned %v while the permit was held; want it to wait", what, err)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestConcurrencyWaitMemory and TestConcurrencyWaitRedis need the
// backends' HoldWait: a call of a method with concurrency=1 wait= waits
// while another holds the permit and runs once that one returns; a caller
// whose context ends while it waits returns the context's error, its
// method never runs, and it holds nothing.
func TestConcurrencyWaitMemory(t *testing.T) { exercisePermitWait(t, memlimit.New()) }

func TestConcurrencyWaitRedis(t *testing.T) { exercisePermitWait(t, newRedisLimiter(t)) }

func exercisePermitWait(t *testing.T, lim runtime.Limiter) {
	p := newPrinter()
	w := NewRateLimitedPrinter(p, lim)
	ctx := context.Background()

	first := printDoc(ctx, w, "ann")
	p.waitStarted(t)
	second := printDoc(ctx, w, "ann")
	p.waiting(t, second, "a second call")
	p.release <- struct{}{}
	if err := wait(t, first); err != nil {
		t.Fatalf("the first call: %v", err)
	}
	p.waitStarted(t)
	p.release <- struct{}{}
	if err := wait(t, second); err != nil {
		t.Fatalf("the second call, once the first returned: %v", err)
	}

	// A caller that gives up returns its context's error; the permit it
	// waited for goes to the next call.
	first = printDoc(ctx, w, "bob")
	p.waitStarted(t)
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := printDoc(cctx, w, "bob")
	p.waiting(t, gaveUp, "a call that waits")
	cancel()
	if err := wait(t, gaveUp); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call whose context was cancelled while it waited: got %v, want context.Canceled", err)
	}
	p.release <- struct{}{}
	if err := wait(t, first); err != nil {
		t.Fatalf("the call that held the permit: %v", err)
	}
	next := printDoc(ctx, w, "bob")
	p.waitStarted(t)
	p.release <- struct{}{}
	if err := wait(t, next); err != nil {
		t.Fatalf("a call after one gave up: %v", err)
	}

	if n, m := p.runs.Load(), p.most.Load(); n != 4 || m != 1 {
		t.Fatalf("Print ran %d times, at most %d at once; want 4, one at a time (the call that gave up never ran)", n, m)
	}
}

// TestConcurrencyWaitHolder needs no backend's HoldWait: a limiter that
// records its calls shows that the wrapper asks for the permit through
// HoldWait with the method's wait=, runs the method once admitted and
// settles the permit, and returns the context's error of a call that
// stops waiting, without running the method.
func TestConcurrencyWaitHolder(t *testing.T) {
	lim := &waitLimiter{}
	p := newPrinter()
	w := NewRateLimitedPrinter(p, lim)

	done := printDoc(context.Background(), w, "ann")
	p.waitStarted(t)
	p.release <- struct{}{}
	if err := wait(t, done); err != nil {
		t.Fatalf("an admitted call: %v", err)
	}

	lim.blocks.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done = printDoc(ctx, w, "ann")
	p.waiting(t, done, "a call that waits")
	cancel()
	if err := wait(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("a call whose context was cancelled while it waited: got %v, want context.Canceled", err)
	}

	lim.mu.Lock()
	defer lim.mu.Unlock()
	if len(lim.waits) != 2 || lim.waits[0] != 10*time.Second || lim.waits[1] != 10*time.Second {
		t.Fatalf("HoldWait was called with %v; want twice with 10s, the method's wait=", lim.waits)
	}
	if len(lim.settled) != 1 || len(lim.settled[0]) != 1 || lim.settled[0][0] != 1 {
		t.Fatalf("settled %v; want once, the permit of the call that ran", lim.settled)
	}
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("Print ran %d times; want once", n)
	}
}

// waitLimiter is a WaitHolder that admits every call, or, once blocks is
// set, keeps it waiting until its context ends; it records the waits and
// the settlements.
type waitLimiter struct {
	blocks  atomic.Bool
	mu      sync.Mutex
	waits   []time.Duration
	settled [][]int64
}

func (l *waitLimiter) Decide(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(reqs))}, nil
}

func (l *waitLimiter) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	ds, _ := l.Decide(ctx, reqs...)
	return ds, &recordedHold{l: l}, nil
}

func (l *waitLimiter) HoldWait(ctx context.Context, max time.Duration, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	l.mu.Lock()
	l.waits = append(l.waits, max)
	l.mu.Unlock()
	if l.blocks.Load() {
		<-ctx.Done()
		return runtime.Decisions{}, nil, ctx.Err()
	}
	return l.Hold(ctx, reqs...)
}

type recordedHold struct{ l *waitLimiter }

func (h *recordedHold) Settle(_ context.Context, used ...int64) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	h.l.settled = append(h.l.settled, used)
	return nil
}
