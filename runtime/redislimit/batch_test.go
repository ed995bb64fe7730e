package redislimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// storm has callers goroutines decide calls each over keys, the first
// limit alone or with the others (by goroutine), and returns how many calls each key had admitted. Every
// decision must come from Redis without error, so lims have the deny
// cache off (denycache_test.go hammers a key with it on).
func storm(t *testing.T, lims []*Limiter, callers, calls int, keys []string, limits ...runtime.Limit) map[string]int {
	t.Helper()
	var (
		mu       sync.Mutex
		admitted = map[string]int{}
		wg       sync.WaitGroup
		failed   atomic.Value
	)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := lims[g%len(lims)]
			for i := range calls {
				key := keys[(g+i)%len(keys)]
				reqs := make([]runtime.Request, 0, len(limits))
				for _, l := range limits[:1+g%len(limits)] {
					reqs = append(reqs, runtime.Request{Limit: l, Key: key})
				}
				ds, err := lim.Decide(context.Background(), reqs...)
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				if ds.Source != runtime.SourceStore {
					failed.CompareAndSwap(nil, fmt.Errorf("a decision came from %v", ds.Source))
					return
				}
				if ds.Allowed {
					mu.Lock()
					admitted[key]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	return admitted
}

// stormKeys returns n keys, some of them sharing nothing but their limit.
func stormKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = awkwardKey(i)
	}
	return keys
}

// evalCalls is how many scripts the server has run.
func evalCalls(t *testing.T, c *redistest.Server) int {
	client := c.Client(t)
	return commandStat(t, client, "evalsha", "calls") + commandStat(t, client, "eval", "calls")
}

// TestBatchingIsExact: 64 callers on three limiters share round trips, and
// every key still admits exactly Max in a window that never slides: one
// admission more or less would show.
func TestBatchingIsExact(t *testing.T) {
	srv := redistest.StartServer(t)
	var lims []*Limiter
	for range 3 {
		lims = append(lims, New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0)))
	}
	perKey := runtime.Limit{Name: "batch.exact", Window: time.Hour, Max: 20}
	daily := runtime.Limit{Name: "batch.exact.daily", Window: 24 * time.Hour, Max: 15, Algorithm: runtime.GCRA}
	keys := stormKeys(8)
	before := evalCalls(t, srv)
	admitted := storm(t, lims, 64, 20, keys, perKey, daily)
	scripts := evalCalls(t, srv) - before
	for _, k := range keys {
		// GCRA admits 15 at once (its burst) and then one per 96 minutes;
		// calls with only the per-key limit fill it to 20.
		require.Equal(t, perKey.Max, admitted[k], "key %q", k)
	}
	require.Less(t, scripts, 64*20, "every decision took a script call of its own: nothing was batched")
	t.Logf("%d decisions in %d script calls", 64*20, scripts)
}

// TestUniformBatchesAreExact: batches whose calls each decide one limit,
// the same for all, take the script's uniform path (the limit sent once);
// here every call also reads a clock of its own, so the batch carries one
// time per call. Each algorithm (decide1 of its own or not) still admits
// exactly Max per key in a window that never slides.
func TestUniformBatchesAreExact(t *testing.T) {
	srv := redistest.StartServer(t)
	base := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	var ticks atomic.Int64
	// Every reading a microsecond later than the one before.
	ticking := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Microsecond) }
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			lim := New(srv.Client(t), WithClock(ticking), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
			l := runtime.Limit{Name: "batch.uniform." + string(algo), Window: time.Hour, Max: 20, Algorithm: algo}
			keys := stormKeys(8)
			before := evalCalls(t, srv)
			admitted := storm(t, []*Limiter{lim}, 64, 20, keys, l)
			scripts := evalCalls(t, srv) - before
			for _, k := range keys {
				require.Equal(t, l.Max, admitted[k], "key %q", k)
			}
			require.Less(t, scripts, 64*20, "every decision took a script call of its own: nothing was batched")
		})
	}
}

// TestLoneCallerIsNotBatched: one caller's decisions each go at once, in a
// script call of their own; with WithBatching(false), every decision does.
func TestLoneCallerIsNotBatched(t *testing.T) {
	srv := redistest.StartServer(t)
	l := runtime.Limit{Name: "batch.lone", Window: time.Minute, Max: 1000, Algorithm: runtime.GCRA}
	for _, on := range []bool{true, false} {
		// WithInstances: the limiters' count of one another is a script
		// call too.
		lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithBatching(on), WithInstances(1))
		_, err := lim.Allow(context.Background(), l, "warm")
		require.NoError(t, err)
		before := evalCalls(t, srv)
		for i := range 50 {
			d, err := lim.Allow(context.Background(), l, fmt.Sprint("k", i))
			require.NoError(t, err)
			require.True(t, d.Allowed)
		}
		require.Equal(t, 50, evalCalls(t, srv)-before, "batching %v", on)
	}
}

// TestBatchingWithoutBatching: the same storm without batching is exact
// too, and takes a script call per decision.
func TestBatchingOff(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithBatching(false), WithDenyCache(0), WithInstances(1))
	l := runtime.Limit{Name: "batch.off", Window: time.Hour, Max: 10}
	keys := stormKeys(4)
	_, err := lim.Allow(context.Background(), l, "warm")
	require.NoError(t, err)
	before := evalCalls(t, srv)
	admitted := storm(t, []*Limiter{lim}, 16, 10, keys, l)
	for _, k := range keys {
		require.Equal(t, l.Max, admitted[k], "key %q", k)
	}
	require.Equal(t, 16*10, evalCalls(t, srv)-before)
}

// TestBatchingThroughNoScript: SCRIPT FLUSH over and over while batches
// run; every decision is still made by Redis, and exactly.
func TestBatchingThroughNoScript(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
	l := runtime.Limit{Name: "batch.noscript", Window: time.Hour, Max: 25, Algorithm: runtime.SlidingWindow}
	keys := stormKeys(6)
	stop := make(chan struct{})
	flushed := make(chan int)
	go func() {
		n := 0
		admin := srv.Client(t)
		for {
			select {
			case <-stop:
				flushed <- n
				return
			default:
			}
			if admin.ScriptFlush(context.Background()).Err() == nil {
				n++
			}
			time.Sleep(time.Millisecond)
		}
	}()
	admitted := storm(t, []*Limiter{lim}, 32, 20, keys, l)
	close(stop)
	t.Logf("%d SCRIPT FLUSHes", <-flushed)
	for _, k := range keys {
		require.Equal(t, l.Max, admitted[k], "key %q", k)
	}
}

// TestBatchFailureFollowsPolicy: with the server stopped (SIGSTOP), every
// caller of a batch gets the policy's answer by its deadline, as a lone
// caller would, and Redis decides again once it resumes.
func TestBatchFailureFollowsPolicy(t *testing.T) {
	srv := redistest.StartServer(t)
	l := runtime.Limit{Name: "batch.fail", Window: time.Hour, Max: 1000}
	for _, tc := range []struct {
		policy FailurePolicy
		// deadline gives each caller a deadline shorter than the
		// limiter's timeout; without one, only the batcher's watch (see
		// watch.go) ends the waits.
		deadline bool
	}{{FailClosed, true}, {FailLocal, true}, {FailClosed, false}, {FailLocal, false}} {
		policy := tc.policy
		t.Run(fmt.Sprintf("%v/deadline=%v", policy, tc.deadline), func(t *testing.T) {
			events := &degradedLog{}
			lim := New(srv.Client(t), WithFailurePolicy(policy), WithTimeout(200*time.Millisecond), WithInstances(1),
				WithRetryInterval(50*time.Millisecond), WithOnDegraded(events.record))
			_, err := lim.Allow(context.Background(), l, "warm")
			require.NoError(t, err)
			srv.Pause(t)
			const callers = 32
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if tc.deadline {
						ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
					}
					defer cancel()
					ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: fmt.Sprint("k", i)})
					switch {
					case policy == FailClosed && !errors.Is(err, runtime.ErrUnavailable):
						errs <- fmt.Errorf("FailClosed answered %v, %v", ds, err)
					case policy == FailLocal && (err != nil || ds.Source != runtime.SourceFallback || !ds.Allowed):
						errs <- fmt.Errorf("FailLocal answered %+v, %v", ds, err)
					}
				}()
			}
			wg.Wait()
			srv.Resume(t)
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			require.Equal(t, callers, events.len(), "every decision Redis missed is reported")
			require.Eventually(t, func() bool {
				ds, err := lim.Decide(context.Background(), runtime.Request{Limit: l, Key: "after"})
				return err == nil && ds.Source == runtime.SourceStore
			}, 10*time.Second, 20*time.Millisecond, "Redis decides again after it resumes")
		})
	}
}

// testClusterBatching is TestBatchingIsExact on a Redis Cluster, where a
// batch is a pipeline split by node.
func testClusterBatching(t *testing.T, strict strictLimiter) {
	var lims []*Limiter
	for range 2 {
		lim, _ := strict(t, WithDenyCache(0))
		lims = append(lims, lim)
	}
	perKey := runtime.Limit{Name: "cluster.batch", Window: time.Hour, Max: 12}
	other := runtime.Limit{Name: "cluster.batch.other", Window: time.Hour, Max: 100, Algorithm: runtime.TokenBucket}
	keys := stormKeys(12)
	admitted := storm(t, lims, 48, 12, keys, perKey, other)
	for _, k := range keys {
		require.Equal(t, perKey.Max, admitted[k], "key %q", k)
	}
}
