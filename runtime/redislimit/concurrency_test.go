package redislimit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
// renewals and releases, and then all along an audited run of holders:
// each is reloaded, batched or not.
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

			// Flushed again and again while holders contend.
			stopFlushing := flushScripts(client, 5*time.Millisecond)
			auditPermits(t, lim, concLimit("conc.noscript.audit", 3, time.Minute), []string{"a", "b"}, 16, 30)
			n, err := stopFlushing()
			require.NoError(t, err, "SCRIPT FLUSH")
			require.Positive(t, n)
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

// TestConcurrencyWhenRedisFails holds a permit, then stops Redis: renewals
// and the release fail as unavailable, not lost, runtime.Keep cancels the
// call once its lease has passed unrenewed, and each failure policy
// decides new calls as it does for rate limits, FailLocal's fallback with
// permits of its own.
func TestConcurrencyWhenRedisFails(t *testing.T) {
	srv := redistest.StartServer(t)
	l := concLimit("conc.fail", 2, 2*time.Second)
	lims := map[FailurePolicy]*Limiter{}
	for _, p := range []FailurePolicy{FailClosed, FailOpen, FailLocal} {
		lims[p] = New(srv.Client(t), WithFailurePolicy(p), WithTimeout(time.Second), WithInstances(1))
	}
	held := holdPermit(t, lims[FailClosed], l, "k")
	kept, stop := runtime.Keep(ctx, held)
	defer stop()
	srv.Stop(t)

	until := held.HeldUntil()
	err := held.Renew(ctx)
	require.ErrorIs(t, err, runtime.ErrUnavailable)
	require.NotErrorIs(t, err, runtime.ErrPermitLost)
	require.Equal(t, until, held.HeldUntil(), "a renewal that failed extends nothing")
	select {
	case <-kept.Done():
	case <-time.After(time.Minute):
		t.Fatal("Keep did not cancel the call")
	}
	require.ErrorIs(t, context.Cause(kept), runtime.ErrPermitLost)
	require.False(t, time.Now().Before(held.HeldUntil()), "cancelled once the lease passed")
	err = held.Settle(ctx, 1)
	require.ErrorIs(t, err, runtime.ErrUnavailable)

	_, _, err = lims[FailClosed].Hold(ctx, runtime.Request{Limit: l, Key: "k"})
	require.ErrorIs(t, err, runtime.ErrUnavailable)

	ds, h, err := lims[FailOpen].Hold(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.Equal(t, runtime.SourceFailOpen, ds.Source)
	_, isPermit := h.(runtime.PermitHold)
	require.False(t, isPermit, "admitted without a permit: nothing to renew")
	require.NoError(t, h.Settle(ctx, 1))

	// The fallback holds permits of its own, Max of them for this one
	// instance, renewed and released through the Hold it returned.
	rate := runtime.Request{Limit: runtime.Limit{Name: "conc.fail.rate", Window: time.Hour, Max: 5}, Key: "k"}
	var local []runtime.PermitHold
	for range l.Max {
		ds, h, err = lims[FailLocal].Hold(ctx, runtime.Request{Limit: l, Key: "k"}, rate)
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		require.Equal(t, runtime.SourceFallback, ds.Source)
		ph, ok := h.(runtime.PermitHold)
		require.True(t, ok, "the fallback's permit is renewed through %T", h)
		require.NoError(t, ph.Renew(ctx))
		local = append(local, ph)
	}
	ds, _, err = lims[FailLocal].Hold(ctx, runtime.Request{Limit: l, Key: "k"}, rate)
	require.NoError(t, err)
	require.False(t, ds.Allowed, "the fallback holds at most Max")
	require.NoError(t, local[0].Settle(ctx, 1, 1))
	ds, h, err = lims[FailLocal].Hold(ctx, runtime.Request{Limit: l, Key: "k"}, rate)
	require.NoError(t, err)
	require.True(t, ds.Allowed, "a released permit is free again")
	require.NoError(t, h.Settle(ctx, 1, 1))
}

// holdSpan is one call's hold of a permit as its caller saw it: from when
// the admission's reply arrived to when its release was sent, both on the
// process's monotonic clock (ns since a base). Redis held the permit for
// at least that span, so spans that overlap more than Max show a breach.
type holdSpan struct {
	key      string
	from, to int64
}

// maxOverlap returns, per key, the most spans that overlap at once.
func maxOverlap(spans []holdSpan) map[string]int {
	type edge struct {
		at  int64
		add int
	}
	byKey := map[string][]edge{}
	for _, s := range spans {
		byKey[s.key] = append(byKey[s.key], edge{s.from, 1}, edge{s.to, -1})
	}
	out := map[string]int{}
	for k, es := range byKey {
		// At equal times a release comes first: a span is closed at its end.
		slices.SortFunc(es, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.add, b.add)) })
		n := 0
		for _, e := range es {
			n += e.add
			out[k] = max(out[k], n)
		}
	}
	return out
}

// auditPermits has goroutines callers hold permits of l on keys, calls
// times each, running each call under runtime.Keep for a moment (renewing
// every fourth), and checks that no more than l.Max spans of a key ever
// overlap.
func auditPermits(t *testing.T, lim *Limiter, l runtime.Limit, keys []string, goroutines, calls int) {
	t.Helper()
	base := time.Now()
	var (
		mu       sync.Mutex
		spans    []holdSpan
		denied   atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
	)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				key := keys[(g+i)%len(keys)]
				h, err := runtime.Admit(ctx, lim, runtime.Request{Limit: l, Key: key})
				from := int64(time.Since(base))
				if errors.Is(err, runtime.ErrLimited) {
					denied.Add(1)
					continue
				}
				if err != nil {
					failures.Add(1)
					continue
				}
				run, stop := runtime.Keep(ctx, h)
				if i%3 == 0 {
					time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				}
				if i%4 == 1 {
					// Renewals share round trips with the others' calls.
					if err := h.(runtime.PermitHold).Renew(ctx); err != nil {
						failures.Add(1)
					}
				}
				lost := run.Err() != nil
				stop()
				to := int64(time.Since(base))
				if err := h.Settle(ctx, 1); err != nil || lost {
					failures.Add(1)
				}
				mu.Lock()
				spans = append(spans, holdSpan{key, from, to})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Zero(t, failures.Load(), "calls that failed or lost their permit")
	require.Positive(t, denied.Load(), "the limit bound")
	for k, n := range maxOverlap(spans) {
		require.LessOrEqual(t, n, l.Max, "permits held at once on %s", k)
	}
	for _, k := range keys {
		require.Zero(t, permitsHeld(t, lim, l, k), "every permit released on %s", k)
	}
	t.Logf("%d holds, %d denials", len(spans), denied.Load())
}

// TestConcurrencyAudit has 64 goroutines hold permits of a few keys and
// audits every hold, with batching on and off.
func TestConcurrencyAudit(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, batching := range []bool{true, false} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithBatching(batching),
				WithPrefix(fmt.Sprintf("concaudit%v:", batching)))
			auditPermits(t, lim, concLimit("conc.audit", 4, time.Minute), []string{"a", "b", "c"}, 64, 40)
		})
	}
}

func TestMaxOverlapCountsOverlaps(t *testing.T) {
	require.Equal(t, map[string]int{"k": 2, "j": 1}, maxOverlap([]holdSpan{{"k", 0, 10}, {"k", 5, 15}, {"k", 10, 20}, {"j", 0, 1}, {"j", 1, 2}}))
}

// TestConcurrencyCluster holds permits on a Redis Cluster, with clear and
// hashed keys: calls whose two permits are on different slots are held,
// renewed, released and lost as a whole, and concurrent holders of keys
// spread over the nodes are audited, batched and not.
func TestConcurrencyCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	client := c.Client(t)
	for _, hashed := range []bool{false, true} {
		t.Run(fmt.Sprintf("hashed=%v", hashed), func(t *testing.T) {
			clock := newFakeClock()
			opts := []Option{WithFailurePolicy(FailClosed), WithTimeout(10 * time.Second), WithPrefix(fmt.Sprintf("concc%v:", hashed))}
			if hashed {
				opts = append(opts, WithHashedKeys([]byte(strings.Repeat("s", minSecretLen))))
			}
			lim := New(client, append(opts, WithClock(clock.Now))...)
			l := concLimit("conc.cluster", 1, 10*time.Second)
			var keys []string
			slots := map[int]bool{}
			for i := 0; len(slots) < 2; i++ {
				key := fmt.Sprintf("user-%d", i)
				if s := c.KeySlot(t, lim.storageKey(l, key)); !slots[s] {
					slots[s] = true
					keys = append(keys, key)
				}
			}
			reqs := []runtime.Request{{Limit: l, Key: keys[0]}, {Limit: l, Key: keys[1]}}
			ds, h, err := lim.Hold(ctx, reqs...)
			require.NoError(t, err)
			require.True(t, ds.Allowed)
			ph := h.(runtime.PermitHold)
			ds, _, err = lim.Hold(ctx, reqs[1])
			require.NoError(t, err)
			require.False(t, ds.Allowed, "the permit of the second slot is held")
			clock.Advance(8 * time.Second)
			require.NoError(t, ph.Renew(ctx))
			clock.Advance(8 * time.Second)
			for _, k := range keys {
				require.Equal(t, 1, permitsHeld(t, lim, l, k), "renewed on both slots")
			}
			require.NoError(t, ph.Settle(ctx, 1, 1))
			for _, k := range keys {
				require.Zero(t, permitsHeld(t, lim, l, k), "released on both slots")
			}

			// A call denied on its second slot gives back the permit its
			// first slot took.
			other := holdPermit(t, lim, l, keys[1])
			ds, _, err = lim.Hold(ctx, reqs...)
			require.NoError(t, err)
			require.False(t, ds.Allowed)
			require.Zero(t, permitsHeld(t, lim, l, keys[0]), "the first slot's permit was released")
			require.NoError(t, other.Settle(ctx, 1))

			// One slot's permit lost: the call has lost its hold.
			_, h, err = lim.Hold(ctx, reqs...)
			require.NoError(t, err)
			ph = h.(runtime.PermitHold)
			require.NoError(t, lim.Reset(ctx, reqs[1]))
			require.ErrorIs(t, ph.Renew(ctx), runtime.ErrPermitLost)
			require.ErrorIs(t, ph.Settle(ctx, 1, 1), runtime.ErrPermitLost)
			require.Zero(t, permitsHeld(t, lim, l, keys[0]), "the live permit was released all the same")

			// A call waiting on two slots waits in the line of the slot
			// that denies it, and is served once that permit is freed.
			other = holdPermit(t, lim, l, keys[1])
			got := make(chan runtime.Hold, 1)
			go func() {
				ds, h, err := lim.HoldWait(ctx, time.Minute, reqs...)
				if err != nil || !ds.Allowed {
					t.Errorf("waited: %+v, %v", ds, err)
				}
				got <- h
			}()
			require.Eventually(t, func() bool { return places(t, client, lim, l, keys[1]) == 1 }, time.Minute, time.Millisecond)
			require.NoError(t, other.Settle(ctx, 1))
			h = <-got
			require.NotNil(t, h)
			require.Equal(t, 1, permitsHeld(t, lim, l, keys[1]))
			require.Zero(t, places(t, client, lim, l, keys[1]))
			require.NoError(t, h.Settle(ctx, 1, 1))

			for _, batching := range []bool{true, false} {
				lim := New(client, append(opts, WithBatching(batching))...)
				auditPermits(t, lim, concLimit("conc.cluster.audit", 3, time.Minute), []string{"a", "b", "c", "d", "e", "f"}, 32, 20)
			}
		})
	}
}

// TestConcurrencyHashedKeys holds permits with keys stored hashed: the
// key is never in Redis, and the permits count as with clear keys.
func TestConcurrencyHashedKeys(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithHashedKeys([]byte(strings.Repeat("s", minSecretLen))))
	l := concLimit("conc.hashed", 2, time.Hour)
	const key = "alice.smith@example.com"
	a := holdPermit(t, lim, l, key)
	b := holdPermit(t, lim, l, key)
	ds, _, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: key})
	require.NoError(t, err)
	require.False(t, ds.Allowed)
	stored, err := client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, k := range stored {
		require.NotContains(t, k, "alice")
	}
	require.NoError(t, a.Renew(ctx))
	require.NoError(t, a.Settle(ctx, 1))
	require.NoError(t, b.Settle(ctx, 1))
	require.Zero(t, permitsHeld(t, lim, l, key))
}

// TestConcurrencyReleaseResent sends one release twice, as a client that
// lost the reply would: the second removes nothing, and another holder's
// permit stays held. With no marker, it reports the permit lost, as it
// cannot tell its own earlier release from a lease that ended.
func TestConcurrencyReleaseResent(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := concLimit("conc.resent", 2, time.Hour)
	reqs := []runtime.Request{{Limit: l, Key: "k"}}
	ds, h, err := lim.Hold(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	other := holdPermit(t, lim, l, "k")

	ph := h.(*permitHold)
	d := resolvedCall{now: -1, asks: lim.resolve(nil, reqs), vs: make([]verdict, 1), receipts: ph.kept.receipts, used: []int64{1}, op: opRelease}
	s, idx := codeScripts[codeConcurrency], firstN(1)
	require.True(t, releasesOnly(&d, idx))
	args := lim.callArgs(s, d.mode(), &d, idx, "")
	for i, lost := range []bool{false, true} {
		res, err := s.run(ctx, client, args, nil)
		require.NoError(t, err)
		committed, err := readGroup(res, &d, idx, false)
		require.NoError(t, err)
		require.True(t, committed, "send %d", i+1)
		require.Equal(t, lost, d.vs[0].ok, "send %d reports the permit lost", i+1)
		require.Equal(t, 1, permitsHeld(t, lim, l, "k"), "send %d", i+1)
	}
	require.NoError(t, other.Renew(ctx))
	require.NoError(t, other.Settle(ctx, 1))
	require.Zero(t, permitsHeld(t, lim, l, "k"))
	keys, err := client.Keys(ctx, "*settle*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "a release writes no marker")
}
