package redislimit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// places returns how many places key's line of l holds in Redis, live or
// not.
func places(t *testing.T, client redis.Cmdable, lim *Limiter, l runtime.Limit, key string) int64 {
	t.Helper()
	n, err := client.ZCount(ctx, lim.storageKey(l, key), "4503599627370496", "+inf").Result()
	require.NoError(t, err)
	return n
}

// waitLimiters returns n limiters sharing srv, as n replicas would.
func waitLimiters(t *testing.T, srv *redistest.Server, n int, opts ...Option) []*Limiter {
	var lims []*Limiter
	for range n {
		lims = append(lims, New(srv.Client(t), append([]Option{WithFailurePolicy(FailClosed), WithTimeout(10 * time.Second)}, opts...)...))
	}
	return lims
}

// TestHoldWaitServesInOrderOfArrival has callers of three limiters wait
// for the one permit of a key, each arriving once the one before holds its
// place, and checks that they take the permit in that order.
func TestHoldWaitServesInOrderOfArrival(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lims := waitLimiters(t, srv, 3)
	l := concLimit("wait.fifo", 1, time.Minute)
	req := runtime.Request{Limit: l, Key: "tenant"}
	first := holdPermit(t, lims[0], l, "tenant")

	const waiters = 6
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds, h, err := lims[i%3].HoldWait(ctx, time.Minute, req)
			if err != nil || !ds.Allowed {
				t.Errorf("waiter %d: %+v, %v", i, ds, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := h.Settle(ctx, 1); err != nil {
				t.Errorf("waiter %d released: %v", i, err)
			}
		}()
		require.Eventually(t, func() bool { return places(t, client, lims[0], l, "tenant") == int64(i+1) },
			time.Minute, time.Millisecond, "waiter %d takes its place", i)
	}
	require.NoError(t, first.Settle(ctx, 1))
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, order)
	require.Zero(t, places(t, client, lims[0], l, "tenant"), "every place went with its permit")
}

// TestHoldWaitFirstInLineTakesAFreedPermit checks that a call that does
// not wait is denied while another waits, though a permit is free, and
// that a place its waiter stopped keeping counts no more.
func TestHoldWaitFirstInLineTakesAFreedPermit(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	clock := newFakeClock()
	lims := waitLimiters(t, srv, 2, WithClock(clock.Now))
	l := concLimit("wait.first", 1, time.Minute)
	reqs := []runtime.Request{{Limit: l, Key: "k"}}
	held := holdPermit(t, lims[0], l, "k")

	ds, _, line, err := lims[1].joinLine(reqs, nil)
	require.NoError(t, err)
	require.False(t, ds.Allowed)
	require.EqualValues(t, 1, places(t, client, lims[0], l, "k"))
	require.NoError(t, held.Settle(ctx, 1))

	ds, _, err = lims[0].Hold(ctx, reqs...)
	require.NoError(t, err)
	require.False(t, ds.Allowed, "the free permit is the waiter's")
	require.Zero(t, ds.Each[0].Remaining)

	ds, h, _, err := lims[1].joinLine(reqs, line)
	require.NoError(t, err)
	require.True(t, ds.Allowed, "the first in line takes it")
	require.Zero(t, places(t, client, lims[0], l, "k"))
	require.NoError(t, h.Settle(ctx, 1))

	// A waiter that stopped asking (killed, or paused) holds up the line
	// until its place's life ends, then not at all.
	held = holdPermit(t, lims[0], l, "k")
	_, _, _, err = lims[1].joinLine(reqs, nil)
	require.NoError(t, err)
	require.NoError(t, held.Settle(ctx, 1))
	ds, _, err = lims[0].Hold(ctx, reqs...)
	require.NoError(t, err)
	require.False(t, ds.Allowed)
	clock.Advance(placeLife)
	ds, h, err = lims[0].Hold(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed, "a dead place counts no more")
	require.Zero(t, places(t, client, lims[0], l, "k"), "and is dropped")
	require.NoError(t, h.Settle(ctx, 1))
}

// TestHoldWaitGivingUpTakesNothing checks that a waiter that stops waiting,
// its context cancelled or its bound passed, leaves the line and holds no
// permit, and that the one behind it is served.
func TestHoldWaitGivingUpTakesNothing(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lims := waitLimiters(t, srv, 2)
	l := concLimit("wait.giveup", 1, time.Minute)
	req := runtime.Request{Limit: l, Key: "k"}
	held := holdPermit(t, lims[0], l, "k")

	// Cancelled while it waits.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, h, err := lims[1].HoldWait(cctx, time.Hour, req)
		if h != nil {
			err = fmt.Errorf("held %T after giving up", h)
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return places(t, client, lims[0], l, "k") == 1 }, time.Minute, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Zero(t, places(t, client, lims[0], l, "k"), "it left the line")

	// Its bound passed.
	ds, h, err := lims[1].HoldWait(ctx, 50*time.Millisecond, req)
	require.NoError(t, err)
	require.False(t, ds.Allowed)
	require.Nil(t, h)
	require.Zero(t, places(t, client, lims[0], l, "k"), "it left the line")
	require.Equal(t, 1, permitsHeld(t, lims[0], l, "k"), "nothing taken")

	// The one behind a waiter that gave up is served.
	behind := make(chan runtime.Hold, 1)
	cctx, cancel = context.WithCancel(ctx)
	go func() { _, _, _ = lims[1].HoldWait(cctx, time.Hour, req) }()
	require.Eventually(t, func() bool { return places(t, client, lims[0], l, "k") == 1 }, time.Minute, time.Millisecond)
	go func() {
		_, h, err := lims[0].HoldWait(ctx, time.Hour, req)
		if err != nil {
			t.Error(err)
		}
		behind <- h
	}()
	require.Eventually(t, func() bool { return places(t, client, lims[0], l, "k") == 2 }, time.Minute, time.Millisecond)
	cancel()
	require.NoError(t, held.Settle(ctx, 1))
	h = <-behind
	require.NotNil(t, h)
	require.Equal(t, 1, permitsHeld(t, lims[0], l, "k"))
	require.NoError(t, h.Settle(ctx, 1))
	require.Eventually(t, func() bool { return places(t, client, lims[0], l, "k") == 0 }, time.Minute, time.Millisecond)
}

// TestHoldWaitWithARateLimit checks a call of a rate limit and a
// concurrency limit: it waits for the rate limit's RetryAfter, and is
// denied at once when that would not fit its bound.
func TestHoldWaitWithARateLimit(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	clock := newFakeClock()
	lim := waitLimiters(t, srv, 1, WithClock(clock.Now))[0]
	rate := runtime.Limit{Name: "wait.rate", Algorithm: runtime.FixedWindow, Window: time.Hour, Max: 1}
	reqs := []runtime.Request{{Limit: rate, Key: "k"}, {Limit: concLimit("wait.rate.c", 2, time.Hour), Key: "k"}}
	ds, h, err := lim.HoldWait(ctx, time.Minute, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.NoError(t, h.Settle(ctx, 1, 1))

	ds, h, err = lim.HoldWait(ctx, time.Minute, reqs...)
	require.NoError(t, err)
	require.False(t, ds.Allowed, "an hour's wait does not fit a minute")
	require.Nil(t, h)
	require.Zero(t, places(t, client, lim, reqs[1].Limit, "k"), "a rate limit's denial takes no place")
}

// TestHoldWaitAudit has 48 callers of three limiters wait for the 2
// permits of each of 3 keys, and counts the calls inside their held
// section: never more than 2 per key.
func TestHoldWaitAudit(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lims := waitLimiters(t, srv, 3)
	l := concLimit("wait.audit", 2, time.Minute)
	var in [3]atomic.Int32
	var peak [3]atomic.Int32
	var admitted, denied atomic.Int32
	var wg sync.WaitGroup
	for c := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 20 {
				k := (c + n) % 3
				ds, h, err := lims[c%3].HoldWait(ctx, 5*time.Second, runtime.Request{Limit: l, Key: fmt.Sprint(k)})
				if err != nil {
					t.Error(err)
					return
				}
				if !ds.Allowed {
					denied.Add(1)
					continue
				}
				admitted.Add(1)
				now := in[k].Add(1)
				for p := peak[k].Load(); now > p && !peak[k].CompareAndSwap(p, now); p = peak[k].Load() {
				}
				time.Sleep(time.Millisecond)
				in[k].Add(-1)
				if err := h.Settle(ctx, 1); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for k := range peak {
		require.LessOrEqual(t, peak[k].Load(), int32(2), "key %d", k)
		require.Zero(t, places(t, client, lims[0], l, fmt.Sprint(k)), "key %d's line is empty", k)
	}
	require.Positive(t, admitted.Load())
	t.Logf("admitted %d, denied %d; peaks %d %d %d", admitted.Load(), denied.Load(), peak[0].Load(), peak[1].Load(), peak[2].Load())
}

// TestHoldWaitPlaceMemory measures the Redis memory of a place in line,
// beside the key's own, while the key is a listpack.
func TestHoldWaitPlaceMemory(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lim := waitLimiters(t, srv, 1)[0]
	l := concLimit("wait.memory", 1, time.Hour)
	key := strings.Repeat("u", 20)
	holdPermit(t, lim, l, key)
	usage := func() int64 {
		n, err := client.Do(ctx, "MEMORY", "USAGE", lim.storageKey(l, key), "SAMPLES", "0").Int64()
		require.NoError(t, err)
		return n
	}
	before := usage()
	const waiters = 100
	for range waiters {
		_, _, _, err := lim.joinLine([]runtime.Request{{Limit: l, Key: key}}, nil)
		require.NoError(t, err)
	}
	require.EqualValues(t, waiters, places(t, client, lim, l, key))
	enc, err := client.ObjectEncoding(ctx, lim.storageKey(l, key)).Result()
	require.NoError(t, err)
	per := float64(usage()-before) / waiters
	t.Logf("%.1f bytes per place (%s)", per, enc)
	require.Equal(t, "listpack", enc)
	require.LessOrEqual(t, per, 64.0)
}
