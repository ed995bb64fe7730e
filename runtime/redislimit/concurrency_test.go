package redislimit

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// concLimit is a concurrency limit of max permits leased for lease.
func concLimit(name string, max int, lease time.Duration) runtime.Limit {
	return runtime.Limit{Name: name, Algorithm: runtime.Concurrency, Window: lease, Max: max}
}

// holdPermit holds a permit of l on key through lim, and fails the test
// unless it was admitted with a PermitHold.
func holdPermit(t *testing.T, lim *Limiter, l runtime.Limit, key string) runtime.PermitHold {
	t.Helper()
	ds, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: key})
	require.NoError(t, err)
	require.True(t, ds.Allowed, "%+v", ds)
	ph, ok := h.(runtime.PermitHold)
	require.True(t, ok, "%T is no PermitHold", h)
	return ph
}

// permitsHeld returns how many permits Peek reports in use of l on key.
func permitsHeld(t *testing.T, lim *Limiter, l runtime.Limit, key string) int {
	t.Helper()
	ds, err := lim.Peek(ctx, runtime.Request{Limit: l, Key: key})
	require.NoError(t, err)
	return l.Max - ds.Each[0].Remaining
}

func TestConcurrencyHoldsAtMostMax(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, batching := range []bool{true, false} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithBatching(batching),
				WithPrefix(fmt.Sprintf("conc%v:", batching)))
			l := concLimit("conc.max", 3, time.Hour)
			var hs []runtime.PermitHold
			for i := range 3 {
				hs = append(hs, holdPermit(t, lim, l, "alice"))
				require.Equal(t, i+1, permitsHeld(t, lim, l, "alice"))
			}
			ds, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "alice"})
			require.NoError(t, err)
			require.False(t, ds.Allowed)
			require.Nil(t, h)
			d := ds.Each[0]
			require.Zero(t, d.RetryAfter, "a permit comes back when a call ends")
			require.Zero(t, d.Remaining)
			require.Greater(t, d.ResetAfter, 59*time.Minute, "when the last lease ends")
			// Denials are never remembered: a release frees a permit at once.
			ds, _, err = lim.Hold(ctx, runtime.Request{Limit: l, Key: "alice"})
			require.NoError(t, err)
			require.Equal(t, runtime.SourceStore, ds.Source)

			require.NoError(t, hs[0].Settle(ctx, 1), "a permit is released whatever used says")
			require.ErrorIs(t, hs[0].Settle(ctx, 1), runtime.ErrSettled)
			require.Equal(t, 2, permitsHeld(t, lim, l, "alice"))
			hs[0] = holdPermit(t, lim, l, "alice")
			require.NoError(t, hs[1].Settle(ctx, 0))
			require.Equal(t, 2, permitsHeld(t, lim, l, "alice"))
			require.Zero(t, permitsHeld(t, lim, l, "bob"), "each key has its own permits")

			// Reset drops every permit; the releases that follow find them
			// lost and change nothing.
			require.NoError(t, lim.Reset(ctx, runtime.Request{Limit: l, Key: "alice"}))
			require.Zero(t, permitsHeld(t, lim, l, "alice"))
			fresh := holdPermit(t, lim, l, "alice")
			require.ErrorIs(t, hs[0].Settle(ctx, 1), runtime.ErrPermitLost)
			require.ErrorIs(t, hs[2].Renew(ctx), runtime.ErrPermitLost)
			require.Equal(t, 1, permitsHeld(t, lim, l, "alice"), "a lost permit's release freed no other")
			require.NoError(t, fresh.Renew(ctx))
			require.NoError(t, fresh.Settle(ctx, 1))
			require.Zero(t, permitsHeld(t, lim, l, "alice"))
		})
	}
}

func TestConcurrencyDecideIsRefused(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed))
	l := concLimit("conc.decide", 2, time.Minute)
	_, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.Contains(t, err.Error(), "runtime.Admit")
	require.NotContains(t, err.Error(), `"k"`, "no key in an error")
	_, err = lim.Allow(ctx, l, "k")
	require.ErrorIs(t, err, errors.ErrUnsupported)
	shadow := l
	shadow.Mode = runtime.ModeShadow
	_, err = lim.Decide(ctx, runtime.Request{Limit: shadow, Key: "k"})
	require.ErrorIs(t, err, errors.ErrUnsupported, "a shadow limit takes a permit too")
	off := l
	off.Mode = runtime.ModeOff
	ds, err := lim.Decide(ctx, runtime.Request{Limit: off, Key: "k"})
	require.NoError(t, err, "a limit that is off takes nothing")
	require.True(t, ds.Allowed)
	_, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: 2})
	require.ErrorIs(t, err, runtime.ErrInvalidCost)
	require.Zero(t, permitsHeld(t, lim, l, "k"))
}

func TestConcurrencyModes(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := concLimit("conc.modes", 1, time.Hour)
	shadow := l
	shadow.Mode = runtime.ModeShadow
	// Shadow: counted, never refused.
	a := holdPermit(t, lim, shadow, "k")
	ds, h, err := lim.Hold(ctx, runtime.Request{Limit: shadow, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.False(t, ds.Each[0].Allowed, "no room, reported")
	_, isPermit := h.(runtime.PermitHold)
	require.False(t, isPermit, "a shadow limit without room took no permit")
	require.NoError(t, h.Settle(ctx, 1))
	require.Equal(t, 1, permitsHeld(t, lim, l, "k"))
	require.NoError(t, a.Settle(ctx, 1))
	require.Zero(t, permitsHeld(t, lim, l, "k"))

	// Off: skipped, with a rate limit beside it held as ever.
	off := l
	off.Mode = runtime.ModeOff
	rate := runtime.Limit{Name: "conc.modes.rate", Window: time.Hour, Max: 5}
	ds, h, err = lim.Hold(ctx, runtime.Request{Limit: off, Key: "k"}, runtime.Request{Limit: rate, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	_, isPermit = h.(runtime.PermitHold)
	require.False(t, isPermit)
	require.NoError(t, h.Settle(ctx, 1, 1))
	require.Zero(t, permitsHeld(t, lim, l, "k"))
}

// TestConcurrencyWithRateLimits holds calls under a concurrency limit and
// a rate limit at once: the rate limit settles as ever, renewals leave it
// alone, and a denial by either takes no permit.
func TestConcurrencyWithRateLimits(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	c := concLimit("conc.mixed", 2, time.Hour)
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			rate := runtime.Limit{Name: "conc.mixed.rate", Algorithm: algo, Window: time.Hour, Max: 3}
			key := "user-" + string(algo)
			reqs := []runtime.Request{{Limit: rate, Key: key}, {Limit: c, Key: key}}
			rateRoom := func() int {
				ds, err := lim.Peek(ctx, reqs[0])
				require.NoError(t, err)
				return ds.Each[0].Remaining
			}
			ds, h, err := lim.Hold(ctx, reqs...)
			require.NoError(t, err)
			require.True(t, ds.Allowed)
			ph := h.(runtime.PermitHold)
			require.NoError(t, ph.Renew(ctx))
			require.Equal(t, 2, rateRoom(), "renewing leaves the rate limit alone")
			require.NoError(t, ph.Settle(ctx, 0, 1))
			require.Zero(t, permitsHeld(t, lim, c, key))
			if algo != runtime.FixedWindow || rateRoom() == 3 {
				require.Equal(t, 3, rateRoom(), "the rate limit's unit was given back")
			}
			// Two permits held: the third call is denied by the
			// concurrency limit and records nothing under the rate limit.
			h1 := holdPermit(t, lim, c, key)
			h2 := holdPermit(t, lim, c, key)
			before := rateRoom()
			ds, _, err = lim.Hold(ctx, reqs...)
			require.NoError(t, err)
			require.False(t, ds.Allowed)
			require.Equal(t, before, rateRoom())
			require.NoError(t, h1.Settle(ctx, 1))
			require.NoError(t, h2.Settle(ctx, 1))
		})
	}
}

// TestConcurrencyLeaseEnds runs on the limiter's clock (WithClock), so that
// a permit's lease ends when the test says: Renew and Settle then report
// ErrPermitLost, and change no other holder's permit.
func TestConcurrencyLeaseEnds(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim := New(srv.Client(t), WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := concLimit("conc.lease", 1, 10*time.Second)
	a := holdPermit(t, lim, l, "k")
	clock.Advance(8 * time.Second)
	require.NoError(t, a.Renew(ctx), "renewed before its lease ended")
	clock.Advance(8 * time.Second)
	require.Equal(t, 1, permitsHeld(t, lim, l, "k"), "the renewal extended the lease from then")
	ds, _, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.False(t, ds.Allowed)

	clock.Advance(2*time.Second + time.Microsecond)
	require.Zero(t, permitsHeld(t, lim, l, "k"), "the lease ended")
	b := holdPermit(t, lim, l, "k")
	require.ErrorIs(t, a.Renew(ctx), runtime.ErrPermitLost)
	err = a.Settle(ctx, 1)
	require.ErrorIs(t, err, runtime.ErrPermitLost)
	require.NotErrorIs(t, err, runtime.ErrUnavailable)
	require.Contains(t, err.Error(), "conc.lease")
	require.Equal(t, 1, permitsHeld(t, lim, l, "k"), "the lost permit's release freed no other")
	require.NoError(t, b.Renew(ctx))
	require.NoError(t, b.Settle(ctx, 1))

	// A permit expired but not yet dropped is lost too.
	c := holdPermit(t, lim, l, "k")
	clock.Advance(10 * time.Second)
	require.ErrorIs(t, c.Renew(ctx), runtime.ErrPermitLost)
	require.ErrorIs(t, c.Settle(ctx, 1), runtime.ErrPermitLost)
}

// TestConcurrencyHeldUntil checks that HeldUntil runs from when the
// acquisition, and then each renewal, was sent, and never moves back.
func TestConcurrencyHeldUntil(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := concLimit("conc.until", 2, time.Hour)
	before := time.Now()
	h := holdPermit(t, lim, l, "k")
	after := time.Now()
	until := h.HeldUntil()
	require.False(t, until.Before(before.Add(time.Hour)))
	require.False(t, until.After(after.Add(time.Hour)))
	require.NoError(t, h.Renew(ctx))
	require.False(t, h.HeldUntil().Before(until))
	require.NoError(t, h.Settle(ctx, 1))

	// The shortest lease of a call's permits bounds them all.
	short := concLimit("conc.until.short", 2, time.Minute)
	ds, hold, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k"}, runtime.Request{Limit: short, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.False(t, hold.(runtime.PermitHold).HeldUntil().After(time.Now().Add(time.Minute)))
	require.NoError(t, hold.Settle(ctx, 1, 1))
}

// TestConcurrencyNoScript flushes the scripts between acquisitions,
// renewals and releases: each is reloaded, batched or not.
func TestConcurrencyNoScript(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	for _, batching := range []bool{true, false} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithBatching(batching),
				WithPrefix(fmt.Sprintf("concns%v:", batching)))
			l := concLimit("conc.noscript", 2, time.Hour)
			flush := func() { require.NoError(t, client.ScriptFlush(ctx).Err()) }
			flush()
			h := holdPermit(t, lim, l, "k")
			flush()
			require.NoError(t, h.Renew(ctx))
			flush()
			require.Equal(t, 1, permitsHeld(t, lim, l, "k"))
			flush()
			require.NoError(t, h.Settle(ctx, 1))
			require.Zero(t, permitsHeld(t, lim, l, "k"))
		})
	}
}

// TestConcurrencyMemory measures the Redis memory of a key per permit
// held, beside the key's own, while the key is a listpack (at most 127
// permits with Redis's default zset-max-listpack-entries, 128), and
// reports it beyond.
func TestConcurrencyMemory(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	usage := func(l runtime.Limit, key string) (int64, string) {
		skey := lim.storageKey(l, key)
		n, err := client.Do(ctx, "MEMORY", "USAGE", skey, "SAMPLES", "0").Int64()
		require.NoError(t, err)
		enc, err := client.ObjectEncoding(ctx, skey).Result()
		require.NoError(t, err)
		return n, enc
	}
	for _, held := range []int{100, 1000} {
		l := concLimit(fmt.Sprintf("conc.memory.%d", held), held, time.Hour)
		key := strings.Repeat("u", 20)
		holdPermit(t, lim, l, key)
		one, _ := usage(l, key)
		for range held - 1 {
			holdPermit(t, lim, l, key)
		}
		all, enc := usage(l, key)
		per := float64(all-one) / float64(held-1)
		t.Logf("%d permits held: %d bytes (%s), %.1f bytes per permit beside the key's own %d", held, all, enc, per, one)
		if held <= 127 {
			require.Equal(t, "listpack", enc)
			require.LessOrEqual(t, per, 64.0)
		}
	}
}

// TestConcurrencyNeverLeased checks that a limiter with leases never
// leases a concurrency limit: every admission of a hot key is Redis's.
func TestConcurrencyNeverLeased(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithLeases(time.Millisecond), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := concLimit("conc.lease.none", 1000, time.Hour)
	require.False(t, leases(codeConcurrency))
	for range 200 {
		ds, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "hot"})
		require.NoError(t, err)
		require.Equal(t, runtime.SourceStore, ds.Source)
		require.NoError(t, h.Settle(ctx, 1))
	}
	require.Zero(t, permitsHeld(t, lim, l, "hot"))
}

var _ = redis.Nil
