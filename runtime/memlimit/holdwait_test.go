package memlimit

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// waiting returns how many HoldWait calls wait in the queue of r's key.
func waiting(lim *Limiter, r runtime.Request) int {
	var d keyDigests
	s, _, _ := lim.locate(r, &d)
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waits[waitKeyOf(r)])
}

// permits returns how many permits of r's key are live, counted in its
// entry: Peek's Remaining also counts the waiters.
func permits(lim *Limiter, r runtime.Request) int {
	var d keyDigests
	s, h, k := lim.locate(r, &d)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tab.Load().find(h, &k)
	if e == nil {
		return 0
	}
	e.acquire()
	defer e.release(false)
	p, err := lim.paramsOf(r.Limit, 1)
	if err != nil {
		panic(err)
	}
	return int(e.peek(lim.now(), p).count)
}

// queues returns how many keys have a queue, over every shard.
func queues(lim *Limiter) int {
	n := 0
	for i := range lim.shards {
		s := &lim.shards[i]
		s.mu.Lock()
		n += len(s.waits)
		s.mu.Unlock()
	}
	return n
}

// wakeAll wakes every waiter, as a test's fake clock moves without an
// event.
func (m *Limiter) wakeAll() {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for _, q := range s.waits {
			for _, e := range q {
				e.w.signal()
			}
		}
		s.mu.Unlock()
	}
}

// untilWaiting waits until n calls wait in the queue of r's key.
func untilWaiting(t *testing.T, lim *Limiter, r runtime.Request, n int) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); waiting(lim, r) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d calls wait for %q, not %d", waiting(lim, r), r.Key, n)
		}
	}
}

// waited is what a HoldWait call returned.
type waited struct {
	ds  runtime.Decisions
	h   runtime.Hold
	err error
}

// holdWait runs lim.HoldWait on a goroutine, and returns the channel on
// which it sends what the call returned.
func holdWait(ctx context.Context, lim runtime.WaitHolder, max time.Duration, reqs ...runtime.Request) <-chan waited {
	c := make(chan waited, 1)
	go func() {
		ds, h, err := lim.HoldWait(ctx, max, reqs...)
		c <- waited{ds, h, err}
	}()
	return c
}

// result receives what a HoldWait call returned.
func result(t *testing.T, c <-chan waited) waited {
	t.Helper()
	select {
	case w := <-c:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("HoldWait did not return")
		return waited{}
	}
}

// returned receives what a HoldWait call returned, and requires that it
// admitted the call, or, when not admit, that its bound ended it with a
// denial.
func returned(t *testing.T, c <-chan waited, admit bool) waited {
	t.Helper()
	w := result(t, c)
	require.NoError(t, w.err)
	require.Equal(t, admit, w.ds.Allowed, "%v", w.ds)
	require.Equal(t, admit, w.h != nil, "Hold %v", w.h)
	return w
}

// admitted receives the Hold of a HoldWait call that was admitted.
func admitted(t *testing.T, c <-chan waited) runtime.Hold {
	t.Helper()
	return returned(t, c, true).h
}

// longConc is a concurrency limit whose leases outlast any test.
func longConc(max int) runtime.Limit {
	return runtime.Limit{Name: "conc", Window: time.Hour, Max: max, Algorithm: runtime.Concurrency}
}

func TestHoldWaitFIFO(t *testing.T) {
	lim := New()
	r := runtime.Request{Limit: longConc(1), Key: "k"}
	first := mustHold(t, lim, r)
	const n = 5
	var calls [n]<-chan waited
	for i := range calls {
		calls[i] = holdWait(ctx, lim, time.Hour, r)
		untilWaiting(t, lim, r, i+1)
	}
	require.NoError(t, first.Settle(ctx, 1))
	for i := range calls {
		h := admitted(t, calls[i])
		require.Equal(t, n-1-i, waiting(lim, r), "the call admitted left the queue")
		for _, c := range calls[i+1:] {
			select {
			case w := <-c:
				t.Fatalf("a call behind the %dth returned before it: %+v", i, w)
			default:
			}
		}
		require.Equal(t, 1, permits(lim, r))
		require.NoError(t, h.Settle(ctx, 1))
	}
	require.Zero(t, queues(lim))
}

func TestHoldWaitDeniesCallsThatDoNotWait(t *testing.T) {
	// The waiter is also denied by a rate limit, on a clock that does not
	// move: it keeps its place in the queue beside a free permit.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now))
	c := runtime.Request{Limit: longConc(1), Key: "k"}
	rate := runtime.Request{Limit: runtime.Limit{Name: "rate", Window: time.Minute, Max: 1, Algorithm: runtime.FixedWindow}, Key: "k"}
	first := mustHold(t, lim, c)
	mustHold(t, lim, rate)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	call := holdWait(wctx, lim, time.Hour, c, rate)
	untilWaiting(t, lim, c, 1)
	require.NoError(t, first.Settle(ctx, 1))
	require.Zero(t, permits(lim, c), "the permit is free")

	ds := denied(t, lim, c)
	require.Equal(t, runtime.Decision{}, ds.Each[0], "the free permit is the waiter's")
	require.False(t, mustPeek(t, lim, c).Allowed, "Peek says what Hold would")

	cancel()
	w := result(t, call)
	require.ErrorIs(t, w.err, context.Canceled)
	require.Nil(t, w.h)
	require.Zero(t, queues(lim))
	mustHold(t, lim, c)
}

func TestHoldWaitGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		// wait starts the call that gives up, and checks what it returned.
		wait func(*testing.T, *Limiter, runtime.Request) func()
	}{
		{"cancelled", func(t *testing.T, lim *Limiter, r runtime.Request) func() {
			wctx, cancel := context.WithCancel(ctx)
			call := holdWait(wctx, lim, time.Hour, r)
			return func() {
				cancel()
				w := result(t, call)
				require.ErrorIs(t, w.err, context.Canceled)
				require.Nil(t, w.h)
			}
		}},
		{"max", func(t *testing.T, lim *Limiter, r runtime.Request) func() {
			call := holdWait(ctx, lim, 20*time.Millisecond, r)
			return func() { returned(t, call, false) }
		}},
		{"deadline", func(t *testing.T, lim *Limiter, r runtime.Request) func() {
			wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			call := holdWait(wctx, lim, time.Hour, r)
			return func() {
				defer cancel()
				returned(t, call, false)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The call that gives up waits, once queued, until the call
			// behind it is queued too, however slow the machine.
			lim := New()
			gate := make(chan struct{})
			var denials atomic.Int32
			lim.waitHook = func() {
				if denials.Add(1) == 1 {
					<-gate
				}
			}
			r := runtime.Request{Limit: longConc(1), Key: "k"}
			first := mustHold(t, lim, r)
			check := tc.wait(t, lim, r)
			untilWaiting(t, lim, r, 1)
			behind := holdWait(ctx, lim, time.Hour, r)
			untilWaiting(t, lim, r, 2)
			close(gate)
			check()
			require.Equal(t, 1, waiting(lim, r), "the call that gave up left the queue")
			require.Equal(t, 1, permits(lim, r), "and took nothing")
			require.NoError(t, first.Settle(ctx, 1))
			h := admitted(t, behind)
			require.Equal(t, 1, permits(lim, r))
			require.NoError(t, h.Settle(ctx, 1))
			require.Zero(t, queues(lim))
		})
	}
}

func TestHoldWaitLeaseEnds(t *testing.T) {
	t.Run("fake clock", func(t *testing.T) {
		clock := newFakeClock()
		lim := New(WithClock(clock.Now))
		r := runtime.Request{Limit: concLimit(1), Key: "k"}
		first := mustHold(t, lim, r)
		call := holdWait(ctx, lim, time.Hour, r)
		untilWaiting(t, lim, r, 1)
		clock.Advance(time.Second)
		lim.wakeAll()
		h := admitted(t, call)
		require.ErrorIs(t, first.Settle(ctx, 1), runtime.ErrPermitLost)
		require.Equal(t, 1, permits(lim, r))
		require.NoError(t, h.Settle(ctx, 1))
	})
	t.Run("process clock", func(t *testing.T) {
		// No event says the lease ended: the waiter wakes at its end.
		lim := New()
		l := runtime.Limit{Name: "conc", Window: 30 * time.Millisecond, Max: 1, Algorithm: runtime.Concurrency}
		r := runtime.Request{Limit: l, Key: "k"}
		first := mustHold(t, lim, r)
		h := admitted(t, holdWait(ctx, lim, time.Hour, r))
		require.ErrorIs(t, first.Settle(ctx, 1), runtime.ErrPermitLost)
		if err := h.Settle(ctx, 1); err != nil {
			// A slow machine let its own lease end too.
			require.ErrorIs(t, err, runtime.ErrPermitLost)
		}
	})
}

func TestHoldWaitReset(t *testing.T) {
	lim := New()
	r := runtime.Request{Limit: longConc(1), Key: "k"}
	first := mustHold(t, lim, r)
	call := holdWait(ctx, lim, time.Hour, r)
	untilWaiting(t, lim, r, 1)
	require.NoError(t, lim.Reset(ctx, r))
	h := admitted(t, call)
	require.ErrorIs(t, first.Settle(ctx, 1), runtime.ErrPermitLost)
	require.NoError(t, h.Settle(ctx, 1))
}

func TestHoldWaitRateLimit(t *testing.T) {
	c := runtime.Request{Limit: longConc(1), Key: "k"}
	t.Run("waits for RetryAfter", func(t *testing.T) {
		lim := New()
		rate := runtime.Request{Limit: runtime.Limit{Name: "rate", Window: 20 * time.Millisecond, Max: 1, Algorithm: runtime.GCRA}, Key: "k"}
		mustHold(t, lim, rate)
		var queued []int
		lim.waitHook = func() { queued = append(queued, waiting(lim, c)) }
		ds, h, err := lim.HoldWait(ctx, time.Hour, rate, c)
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		require.NotEmpty(t, queued, "the call waited")
		require.Equal(t, 0, queued[0], "a call only a rate limit denies joins no queue")
		require.Equal(t, 1, permits(lim, c))
		require.NoError(t, h.Settle(ctx, 1, 1))
		require.Zero(t, queues(lim))
	})
	slow := runtime.Request{Limit: runtime.Limit{Name: "rate", Window: time.Hour, Max: 1, Algorithm: runtime.GCRA}, Key: "k"}
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		max  time.Duration
	}{
		{"beyond max", func() (context.Context, context.CancelFunc) { return context.WithCancel(ctx) }, time.Minute},
		{"beyond the deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Minute) }, 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Were it to wait, it would hold the test for a minute.
			lim := New()
			mustHold(t, lim, slow)
			held := mustHold(t, lim, c)
			wctx, cancel := tc.ctx()
			defer cancel()
			ds, h, err := lim.HoldWait(wctx, tc.max, slow, c)
			require.NoError(t, err)
			require.Nil(t, h)
			require.False(t, ds.Allowed)
			require.False(t, ds.Each[0].Allowed)
			require.Greater(t, ds.Each[0].RetryAfter, time.Minute)
			require.Zero(t, queues(lim), "a call that stops waiting leaves its queues")
			require.Equal(t, 1, permits(lim, c))
			require.NoError(t, held.Settle(ctx, 1))
		})
	}
}

func TestHoldWaitModes(t *testing.T) {
	// Neither a shadow limit nor one off keeps a call waiting, and a call
	// a rate limit denies takes no permit.
	lim := New()
	c := runtime.Request{Limit: longConc(1), Key: "k"}
	held := mustHold(t, lim, c)
	for _, mode := range []runtime.Mode{runtime.ModeShadow, runtime.ModeOff} {
		r := c
		r.Limit.Mode = mode
		ds, h, err := lim.HoldWait(ctx, time.Hour, r)
		require.NoError(t, err)
		require.True(t, ds.Allowed, "%s", mode)
		require.NoError(t, h.Settle(ctx, 1))
	}
	require.NoError(t, held.Settle(ctx, 1))
	slow := runtime.Request{Limit: runtime.Limit{Name: "rate", Window: time.Hour, Max: 1, Algorithm: runtime.GCRA}, Key: "k"}
	mustHold(t, lim, slow)
	ds, h, err := lim.HoldWait(ctx, time.Minute, c, slow)
	require.NoError(t, err)
	require.Nil(t, h)
	require.Equal(t, []bool{true, false}, []bool{ds.Each[0].Allowed, ds.Each[1].Allowed})
	require.Zero(t, permits(lim, c), "all or nothing")
	require.Zero(t, queues(lim))
}

func TestHoldWaitOperate(t *testing.T) {
	lim := New()
	var o runtime.Overrides
	require.NoError(t, o.Set(map[string]runtime.Override{"conc": {Max: 2}}))
	op := runtime.Operate(lim, runtime.WithOverrides(&o)).(runtime.WaitHolder)
	r := runtime.Request{Limit: longConc(1), Key: "k"}
	held := []runtime.Hold{}
	for range 2 {
		_, h, err := op.HoldWait(ctx, time.Hour, r)
		require.NoError(t, err)
		require.NotNil(t, h, "the override's Max admits two")
		held = append(held, h)
	}
	call := holdWait(ctx, op, time.Hour, r)
	untilWaiting(t, lim, r, 1)
	admitWait := make(chan waited, 1)
	go func() {
		h, err := runtime.AdmitWait(ctx, op, time.Hour, r)
		admitWait <- waited{runtime.Decisions{Allowed: err == nil}, h, err}
	}()
	untilWaiting(t, lim, r, 2)
	require.NoError(t, held[0].Settle(ctx, 1))
	h := admitted(t, call)
	require.Equal(t, 1, waiting(lim, r), "AdmitWait waits behind it")
	require.NoError(t, held[1].Settle(ctx, 1))
	require.NoError(t, admitted(t, admitWait).Settle(ctx, 1))
	require.NoError(t, h.Settle(ctx, 1))

	// Without the override, Max is 1: a call that waits past max is told
	// the limit.
	h = mustHold(t, lim, r)
	_, err := runtime.AdmitWait(ctx, lim, 10*time.Millisecond, r)
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "conc", le.Limit.Name)
	require.NoError(t, h.Settle(ctx, 1))
	require.Zero(t, queues(lim))
}

func TestHoldWaitStress(t *testing.T) {
	const (
		workers = 32
		calls   = 150
		max     = 2
	)
	lim := New()
	l := longConc(max)
	keys := []string{"a", "b", "c"}
	var inFlight [3]atomic.Int64
	var ok, bounded atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				k := (g + i) % len(keys)
				wait := time.Hour
				if i%3 == 0 {
					wait = time.Millisecond
				}
				wctx, cancel := ctx, context.CancelFunc(func() {})
				if i%5 == 0 {
					wctx, cancel = context.WithTimeout(ctx, time.Millisecond)
				}
				ds, h, err := lim.HoldWait(wctx, wait, runtime.Request{Limit: l, Key: keys[k]})
				cancel()
				switch {
				case i%5 == 0 && errors.Is(err, context.DeadlineExceeded):
					// Done before the call first asked.
					bounded.Add(1)
					continue
				case err != nil:
					t.Error(err)
					return
				case !ds.Allowed:
					if wait == time.Hour && i%5 != 0 {
						t.Errorf("a call without a short bound was denied: %v", ds)
					}
					bounded.Add(1)
					continue
				}
				if n := inFlight[k].Add(1); n > max {
					t.Errorf("%d calls hold permits of key %s", n, keys[k])
				}
				goruntime.Gosched()
				inFlight[k].Add(-1)
				if err := h.Settle(ctx, 1); err != nil {
					t.Error(err)
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(workers*calls), ok.Load()+bounded.Load())
	require.Positive(t, ok.Load())
	for _, k := range keys {
		require.Zero(t, permits(lim, runtime.Request{Limit: l, Key: k}), fmt.Sprintf("key %s", k))
	}
	require.Zero(t, queues(lim), "no queue outlives its calls")
}
