package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// scriptCounter counts the script calls a Redis server ran, from INFO
// commandstats, so that a test knows whether a decision asked Redis.
type scriptCounter struct{ admin *redis.Client }

func (c *scriptCounter) calls(t testing.TB) int64 {
	info, err := c.admin.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		switch name {
		case "cmdstat_evalsha", "cmdstat_eval", "cmdstat_evalsha_ro", "cmdstat_eval_ro", "cmdstat_fcall", "cmdstat_fcall_ro":
		default:
			continue
		}
		if ok {
			v, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			require.NoError(t, err)
			n += v
		}
	}
	return n
}

// countedLimiter returns a limiter on srv, which only it may run scripts
// on, and the counter of its script calls. It is told it is alone
// (WithInstances), as counting the limiters sharing Redis takes scripts too.
func countedLimiter(t testing.TB, srv *redistest.Server, opts ...Option) (*Limiter, *scriptCounter) {
	return New(srv.Client(t), append([]Option{WithInstances(1)}, opts...)...), &scriptCounter{admin: srv.Client(t)}
}

// askCounted decides reqs and reports whether Redis was asked, requiring
// that Source says SourceDenyCache exactly when it was not.
func askCounted(t *testing.T, lim *Limiter, cnt *scriptCounter, reqs ...runtime.Request) (runtime.Decisions, bool) {
	t.Helper()
	before := cnt.calls(t)
	ds, err := lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	asked := cnt.calls(t) != before
	require.Equal(t, !asked, ds.Source == runtime.SourceDenyCache,
		"Source %v, yet Redis was asked: %v", ds.Source, asked)
	require.Len(t, ds.Each, len(reqs))
	if !asked {
		require.False(t, ds.Allowed, "the deny cache admitted a call")
		for i, d := range ds.Each {
			if reqs[i].Limit.Mode == runtime.ModeOff {
				continue
			}
			require.False(t, d.Allowed, "limit %d", i)
			require.Positive(t, d.RetryAfter, "limit %d", i)
			require.GreaterOrEqual(t, d.ResetAfter, time.Duration(0), "limit %d", i)
		}
	}
	return ds, asked
}

// TestDenyCacheConformance runs the conformance cases on a limiter with
// the deny cache on: they deny and retry a lot, on a fake clock that also
// goes backwards, and expect Redis's exact answers.
func TestDenyCacheConformance(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	cases := []struct {
		name string
		run  func(t *testing.T, lim testLimiter, clock *fakeClock)
	}{
		{"exactly max per window", testExactlyMax},
		{"waiting retry-after admits", testRetryAfterExact},
		{"denied calls are not recorded", testDeniedNotRecorded},
		{"window slides", testWindowSlides},
		{"keys and names are independent", testIndependentKeys},
		{"cost", testCost},
		{"invalid requests are errors", testInvalid},
		{"clock going backwards never over-admits", testClockBackwards},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := newFakeClock()
			lim := New(client, WithClock(clock.Now), WithPrefix("dcconf:"+t.Name()+":"),
				WithFailurePolicy(FailClosed), WithTimeout(5*time.Second), WithDenyCache(1<<20))
			c.run(t, lim, clock)
		})
	}
}

// TestDenyCacheAnswers walks through what the cache answers and what it
// leaves to Redis, on the caller's clock.
func TestDenyCacheAnswers(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim, cnt := countedLimiter(t, srv, WithClock(clock.Now), WithPrefix("dc:"),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	ask := func(reqs ...runtime.Request) (runtime.Decisions, bool) {
		t.Helper()
		return askCounted(t, lim, cnt, reqs...)
	}
	one := func(l runtime.Limit, key string, cost int64) runtime.Request {
		return runtime.Request{Limit: l, Key: key, Cost: cost}
	}

	t.Run("a denial answers calls of its cost until it expires", func(t *testing.T) {
		l := runtime.Limit{Name: "dc.basic", Window: time.Minute, Max: 3}
		for i := 0; i < 3; i++ {
			ds, asked := ask(one(l, "k", 1))
			require.True(t, asked)
			require.True(t, ds.Allowed)
		}
		ds, asked := ask(one(l, "k", 1))
		require.True(t, asked)
		require.Equal(t, runtime.Decision{RetryAfter: time.Minute, ResetAfter: time.Minute + 2*time.Microsecond}, ds.Each[0])

		clock.Advance(10 * time.Second)
		ds, asked = ask(one(l, "k", 1))
		require.False(t, asked)
		// What Redis would say: the remaining time of the proof, exactly,
		// on a microsecond-aligned clock.
		require.Equal(t, runtime.Decisions{Each: []runtime.Decision{{RetryAfter: 50 * time.Second,
			ResetAfter: 50*time.Second + 2*time.Microsecond}}, Source: runtime.SourceDenyCache}, ds)
		d, err := lim.Allow(ctx, l, "k")
		require.NoError(t, err)
		require.Equal(t, runtime.Decision{RetryAfter: 50 * time.Second, ResetAfter: 50*time.Second + 2*time.Microsecond}, d)
		// A larger cost might have to wait longer than the denial says:
		// Redis answers it, and its denial replaces the one of cost 1
		// until a call of cost 1 is denied again.
		for _, cost := range []int64{2, 3} {
			ds, asked = ask(one(l, "k", cost))
			require.True(t, asked, "cost %d", cost)
			require.False(t, ds.Allowed, "cost %d", cost)
			_, asked = ask(one(l, "k", cost))
			require.False(t, asked, "cost %d, asked again", cost)
		}
		_, asked = ask(one(l, "k", 1))
		require.True(t, asked)
		// The zero Algorithm is SlidingLog, and Burst 0 is Max: the same limit.
		same := l
		same.Algorithm, same.Burst = runtime.SlidingLog, 3
		_, asked = ask(one(same, "k", 1))
		require.False(t, asked)
		// Another key, or any other limit value, is another denial.
		for _, other := range []runtime.Request{
			one(l, "k2", 1),
			one(runtime.Limit{Name: "dc.basic2", Window: time.Minute, Max: 3}, "k", 1),
			one(runtime.Limit{Name: "dc.basic", Window: time.Minute + time.Microsecond, Max: 3}, "k", 1),
			one(runtime.Limit{Name: "dc.basic", Window: time.Minute, Max: 3, Burst: 5}, "k", 1),
			one(runtime.Limit{Name: "dc.basic", Window: time.Minute, Max: 3, Algorithm: runtime.FixedWindow}, "k", 1),
		} {
			_, asked = ask(other)
			require.True(t, asked, "%+v", other)
		}

		// Max raised: Redis is asked, and admits.
		raised := l
		raised.Max = 4
		ds, asked = ask(one(raised, "k", 1))
		require.True(t, asked)
		require.True(t, ds.Allowed)
		// The old Max's denial still holds: the admission only consumed.
		_, asked = ask(one(l, "k", 1))
		require.False(t, asked)

		// 1µs before the proof ends, it answers; when it ends, Redis does.
		clock.Advance(50*time.Second - time.Microsecond)
		ds, asked = ask(one(l, "k", 1))
		require.False(t, asked)
		require.Equal(t, time.Microsecond, ds.Each[0].RetryAfter)
		clock.Advance(time.Microsecond)
		ds, asked = ask(one(l, "k", 1))
		require.True(t, asked)
		// The admission at 0 left the window, and the raised limit's
		// admission at 10s still counts: 3 of 3, so still denied, now
		// until the admission at 1µs leaves.
		require.False(t, ds.Allowed)
		require.Equal(t, time.Microsecond, ds.Each[0].RetryAfter)
		clock.Advance(time.Microsecond)
		ds, asked = ask(one(l, "k", 1))
		require.True(t, asked)
		require.True(t, ds.Allowed)
	})

	t.Run("a smaller cost goes to Redis", func(t *testing.T) {
		l := runtime.Limit{Name: "dc.cost", Window: time.Minute, Max: 5}
		ds, _ := ask(one(l, "k", 3))
		require.True(t, ds.Allowed)
		ds, asked := ask(one(l, "k", 3))
		require.True(t, asked)
		require.False(t, ds.Allowed)
		require.Equal(t, 2, ds.Each[0].Remaining)
		_, asked = ask(one(l, "k", 3))
		require.False(t, asked)
		_, asked = ask(one(l, "k", 4))
		require.True(t, asked, "a larger cost may wait longer: Redis answers it")
		ds, asked = ask(one(l, "k", 2))
		require.True(t, asked)
		require.True(t, ds.Allowed, "room for 2 is left")
		ds, asked = ask(one(l, "k", 1))
		require.True(t, asked)
		require.False(t, ds.Allowed)
		// The denial of cost 1 covers calls of cost 1 only; a larger cost
		// is asked, and then covered in its turn.
		_, asked = ask(one(l, "k", 1))
		require.False(t, asked)
		_, asked = ask(one(l, "k", 2))
		require.True(t, asked)
		_, asked = ask(one(l, "k", 2))
		require.False(t, asked)
	})

	t.Run("a clock gone backwards asks Redis", func(t *testing.T) {
		l := runtime.Limit{Name: "dc.back", Window: time.Minute, Max: 1}
		ask(one(l, "k", 1))
		_, asked := ask(one(l, "k", 1))
		require.True(t, asked)
		_, asked = ask(one(l, "k", 1))
		require.False(t, asked)
		clock.Advance(-time.Microsecond)
		ds, asked := ask(one(l, "k", 1))
		require.True(t, asked)
		require.False(t, ds.Allowed)
		clock.Advance(time.Microsecond)
	})

	t.Run("several limits", func(t *testing.T) {
		a := runtime.Limit{Name: "dc.multi.a", Window: time.Minute, Max: 1}
		b := runtime.Limit{Name: "dc.multi.b", Window: time.Hour, Max: 2, Algorithm: runtime.GCRA}
		ds, _ := ask(one(a, "x", 1))
		require.True(t, ds.Allowed)
		// A denial in a several-limit reply is a denial of that limit
		// alone, at its cost.
		ds, asked := ask(one(a, "x", 1), one(b, "y", 1))
		require.True(t, asked)
		require.False(t, ds.Allowed)
		require.False(t, ds.Each[0].Allowed)
		require.True(t, ds.Each[1].Allowed)
		_, asked = ask(one(a, "x", 1))
		require.False(t, asked)
		// One limit covered, the other with room: Redis answers, so that
		// Each says truthfully that b has room.
		ds, asked = ask(one(b, "y", 1), one(a, "x", 1))
		require.True(t, asked)
		require.True(t, ds.Each[0].Allowed)
		require.False(t, ds.Each[1].Allowed)
		// Both covered: answered locally, each limit with its own wait.
		for i := 0; i < 2; i++ {
			ds, _ = ask(one(b, "y", 1))
			require.True(t, ds.Allowed)
		}
		ds, asked = ask(one(b, "y", 1))
		require.True(t, asked)
		require.False(t, ds.Allowed)
		retryB := ds.Each[0].RetryAfter
		clock.Advance(time.Second)
		ds, asked = ask(one(a, "x", 1), one(b, "y", 1))
		require.False(t, asked)
		require.Equal(t, time.Minute-time.Second, ds.Each[0].RetryAfter)
		require.Equal(t, retryB-time.Second, ds.Each[1].RetryAfter)
		require.Equal(t, max(ds.Each[0].RetryAfter, ds.Each[1].RetryAfter), ds.Decision().RetryAfter)
	})

	t.Run("decisions Redis did not make are not remembered", func(t *testing.T) {
		dead := redistest.StartServer(t)
		client := dead.Client(t)
		dead.Stop(t)
		l := runtime.Limit{Name: "dc.fallback", Window: time.Minute, Max: 1}
		lim := New(client, WithClock(clock.Now), WithTimeout(time.Second), WithInstances(1))
		for i := 0; i < 3; i++ {
			ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
			require.NoError(t, err)
			require.Equal(t, runtime.SourceFallback, ds.Source)
			require.Equal(t, i == 0, ds.Allowed)
		}
		require.Zero(t, lim.deny.len())
	})
}

// TestDenyCacheServerTime checks a denial answered on Redis's clock: the
// proof runs from just before the call was sent, so the cache's RetryAfter
// is at most Redis's.
func TestDenyCacheServerTime(t *testing.T) {
	srv := redistest.StartServer(t)
	on, cnt := countedLimiter(t, srv, WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	off := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0), WithInstances(1))
	l := runtime.Limit{Name: "dc.server", Window: time.Hour, Max: 2}
	req := runtime.Request{Limit: l, Key: "k"}
	for i := 0; i < 2; i++ {
		ds, asked := askCounted(t, on, cnt, req)
		require.True(t, asked)
		require.True(t, ds.Allowed)
	}
	sent := time.Now()
	ds, asked := askCounted(t, on, cnt, req)
	firstTrip := time.Since(sent)
	require.True(t, asked)
	require.False(t, ds.Allowed)
	first := ds.Each[0].RetryAfter
	for i := 0; i < 10; i++ {
		start := time.Now()
		local, asked := askCounted(t, on, cnt, req)
		require.False(t, asked)
		// The same key, asked without the cache, later: the cached wait
		// is never shorter than Redis's (a caller that waits it finds
		// room), and longer by no more than the first denial's round trip
		// and the time in between. Redis truncates its clock to the µs.
		truth, err := off.Decide(ctx, req)
		between := time.Since(start)
		require.NoError(t, err)
		require.False(t, truth.Allowed)
		require.GreaterOrEqual(t, local.Each[0].RetryAfter+time.Microsecond, truth.Each[0].RetryAfter)
		require.LessOrEqual(t, local.Each[0].RetryAfter, truth.Each[0].RetryAfter+between+firstTrip)
		require.Less(t, local.Each[0].RetryAfter, first)
	}
}

// TestDenyCacheNeverDeniesWhatRedisAdmits drives two limiters through the
// same random calls on one fake clock, each on a server of its own, so
// that each has its own, identical history: one with the deny cache, one
// without. They must admit exactly the same calls; where the
// cache answered, Redis must have denied too, and the cache's wait (the
// time left of its proof) is at most Redis's; where the cache did not
// answer, the answers are identical. The clock moves by random steps,
// backwards at times, and often to exactly when a cached denial ends.
func TestDenyCacheNeverDeniesWhatRedisAdmits(t *testing.T) {
	clock := newFakeClock()
	on, cnt := countedLimiter(t, redistest.StartServer(t), WithClock(clock.Now),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	off := New(redistest.StartServer(t).Client(t), WithClock(clock.Now),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))

	// Each name comes with several values, as when a deployment changes a
	// limit: the cache must keep their denials apart. Only values whose
	// calls merely consume each other's room share a name: any values of
	// GCRA (an absolute arrival time), other Max values of the sliding log
	// and the bucketed windows. Another Window tidies a sliding log or
	// re-buckets a window differently, and another rate or size refills a
	// token bucket differently, so that such calls can free room for each
	// other, as WithDenyCache's doc says. Windows are hours long, so that
	// no key expires in real time while the test runs.
	const hour = time.Hour
	variants := map[runtime.Algorithm][][3]int{ // Window in hours/10, Max, Burst
		runtime.SlidingLog:    {{10, 3, 0}, {10, 5, 0}},
		runtime.GCRA:          {{10, 3, 0}, {10, 5, 0}, {10, 3, 5}, {15, 3, 0}},
		runtime.FixedWindow:   {{10, 3, 0}, {10, 5, 0}},
		runtime.SlidingWindow: {{10, 3, 0}, {10, 5, 0}},
		runtime.TokenBucket:   {{10, 3, 0}},
	}
	var limits []runtime.Limit
	for _, algo := range runtime.Algorithms() {
		for _, v := range variants[algo] {
			limits = append(limits, runtime.Limit{Name: "dcdiff." + string(algo), Window: time.Duration(v[0]) * hour / 10,
				Max: v[1], Burst: v[2], Algorithm: algo})
		}
	}
	// Other windows and bursts under other names.
	limits = append(limits,
		runtime.Limit{Name: "dcdiff.sliding-log-long", Window: 3 * hour / 2, Max: 3},
		runtime.Limit{Name: "dcdiff.token-bucket-burst", Window: hour, Max: 3, Burst: 5, Algorithm: runtime.TokenBucket})
	keys := []string{"a", "b", "c"}
	rng := rand.New(rand.NewPCG(10, 10))
	request := func() runtime.Request {
		l := limits[rng.IntN(len(limits))]
		return runtime.Request{Limit: l, Key: keys[rng.IntN(len(keys))], Cost: 1 + rng.Int64N(int64(min(3, l.Capacity())))}
	}
	var local, boundaries, multi int
	var trail []string
	step := func(i int, reqs []runtime.Request) (runtime.Decisions, bool) {
		t.Helper()
		dsOn, asked := askCounted(t, on, cnt, reqs...)
		dsOff, err := off.Decide(ctx, reqs...)
		require.NoError(t, err)
		trail = append(trail, fmt.Sprintf("step %d t=%d %v -> cache %+v redis %+v", i, clock.Now().UnixMicro(), reqs, dsOn, dsOff))
		msg := func() string { return strings.Join(trail[max(0, len(trail)-12):], "\n") }
		require.Equal(t, dsOff.Allowed, dsOn.Allowed, "the cache changed a decision:\n%s", msg())
		if asked {
			require.Equal(t, dsOff.Each, dsOn.Each, "Redis answered differently on identical histories:\n%s", msg())
			return dsOn, false
		}
		local++
		if len(reqs) > 1 {
			multi++
		}
		for j := range reqs {
			require.False(t, dsOff.Each[j].Allowed, "limit %d had room, yet the cache denied it:\n%s", j, msg())
			require.LessOrEqual(t, dsOn.Each[j].RetryAfter, dsOff.Each[j].RetryAfter, "limit %d:\n%s", j, msg())
		}
		return dsOn, true
	}
	var reqs []runtime.Request
	var latest int64 // the latest time (µs) any call was made at
	for i := 0; i < 4000; i++ {
		if reqs != nil && rng.IntN(3) == 0 {
			// The same call again, as a caller that is denied tends to do.
		} else if rng.IntN(5) == 0 {
			a, b := request(), request()
			for b.Limit.Name == a.Limit.Name && b.Key == a.Key {
				b = request()
			}
			reqs = []runtime.Request{a, b}
		} else {
			reqs = []runtime.Request{request()}
		}
		latest = max(latest, clock.Now().UnixMicro())
		ds, wasLocal := step(i, reqs)
		if wasLocal && len(reqs) == 1 && rng.IntN(2) == 0 {
			// To the proof's last microsecond, which the cache still
			// answers (unless the clock is behind a time it already asked
			// Redis at), then to its end, which Redis answers.
			wait := ds.Each[0].RetryAfter
			if wait > time.Microsecond {
				clock.Advance(wait - time.Microsecond)
				_, wasLocal = step(i, reqs)
				require.True(t, wasLocal || clock.Now().UnixMicro() < latest, "1µs before the proof ends")
				latest = max(latest, clock.Now().UnixMicro())
				clock.Advance(time.Microsecond)
			} else {
				clock.Advance(wait)
			}
			_, wasLocal = step(i, reqs)
			require.False(t, wasLocal, "when the proof ends, Redis decides")
			boundaries++
			continue
		}
		switch r := rng.IntN(10); {
		case r < 5:
		case r < 8:
			clock.Advance(time.Duration(rng.Int64N(int64(3 * time.Minute))))
		case r < 9:
			clock.Advance(time.Duration(rng.Int64N(int64(hour))))
		default:
			clock.Advance(-time.Duration(rng.Int64N(int64(5 * time.Minute))))
		}
	}
	t.Logf("%d of 4000 calls answered by the cache (%d with several limits); %d expiries checked", local, multi, boundaries)
	require.Greater(t, local, 200)
	require.Positive(t, multi)
	require.Greater(t, boundaries, 50)
}

// The exactness test for the cache: a hot key under constant denial from
// 32 goroutines across 3 app instances, on server time, audited per window
// from what the script wrote (see exactness_test.go), with the cache on;
// and the script calls per decision with it on and off.
func TestDenyCacheExactnessHot(t *testing.T) {
	const (
		instances  = 3
		goroutines = 32
		max        = 5
		window     = 400 * time.Millisecond
		duration   = 2 * time.Second
	)
	srv := redistest.StartServer(t)
	l := runtime.Limit{Name: "Hot.Denied", Window: window, Max: max}
	const key = "hot@example.com"

	run := func(t *testing.T, cache int, prefix string) (decisions, admitted, calls int64) {
		var lims []*Limiter
		for i := 0; i < instances; i++ {
			lims = append(lims, New(srv.Client(t), WithPrefix(prefix), WithFailurePolicy(FailClosed),
				WithTimeout(10*time.Second), WithDenyCache(cache)))
		}
		cnt := &scriptCounter{admin: srv.Client(t)}
		before := cnt.calls(t)
		var nDecisions, nAdmitted, nLocal atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			lim := lims[g%instances]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					ds, err := lim.Decide(context.Background(), runtime.Request{Limit: l, Key: key})
					if err != nil {
						t.Error(err)
						return
					}
					nDecisions.Add(1)
					if ds.Allowed {
						nAdmitted.Add(1)
					}
					if ds.Source == runtime.SourceDenyCache {
						nLocal.Add(1)
					}
				}
			}()
		}
		time.Sleep(duration)
		close(stop)
		wg.Wait()
		calls = cnt.calls(t) - before
		if cache == 0 {
			require.Zero(t, nLocal.Load())
		}
		// Redis ran no more scripts than there were decisions saying Redis
		// made them (batching may decide several in one), give or take
		// an EVALSHA per goroutine refused with NOSCRIPT before the script
		// was loaded.
		require.Positive(t, calls)
		require.LessOrEqual(t, calls, nDecisions.Load()-nLocal.Load()+goroutines, "decisions that asked Redis")
		return nDecisions.Load(), nAdmitted.Load(), calls
	}

	audit := startAudit(t, srv.Client(t))
	decisions, admitted, calls := run(t, 1<<20, "dchot.on:")
	skey := string(appendStorageKey(nil, "dchot.on:", algoSpecs[runtime.SlidingLog].tag, l.Name, key))
	times := audit.stop(t, skey)
	require.Equal(t, int(admitted), len(times), "every admission the callers saw must be recorded once, and nothing else")
	worst := worstWindow(times, window.Microseconds())
	ideal := idealAdmissions(times, window.Microseconds(), max)
	t.Logf("cache on: %d decisions, %d admitted (ideal %d), %d script calls (%.1f decisions per call); worst window %d for Max %d",
		decisions, admitted, ideal, calls, float64(decisions)/float64(calls), worst, max)
	require.LessOrEqual(t, worst, max, "some window admitted more than Max")

	offDecisions, _, offCalls := run(t, 0, "dchot.off:")
	t.Logf("cache off: %d decisions, %d script calls (%.2f decisions per call)", offDecisions, offCalls, float64(offDecisions)/float64(offCalls))
	// Not a timing: the cache asks Redis only when a denial expires (about
	// Max times a window, and then once per caller at most), and answers
	// every other call itself.
	require.GreaterOrEqual(t, float64(decisions)/float64(calls), 10*float64(offDecisions)/float64(offCalls),
		"the cache should spare at least 9 script calls in 10")
}

// TestDenyCacheBudgetThroughRedis fills a small cache through the limiter
// with many denied keys while one hot key keeps being denied locally.
func TestDenyCacheBudgetThroughRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	const budget = 16 << 10
	lim, cnt := countedLimiter(t, srv, WithClock(clock.Now), WithPrefix("dcbudget:"),
		WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(budget))
	l := runtime.Limit{Name: "dc.budget", Window: time.Hour, Max: 1, Algorithm: runtime.FixedWindow}
	hot := runtime.Request{Limit: l, Key: "hot"}
	askCounted(t, lim, cnt, hot)
	_, asked := askCounted(t, lim, cnt, hot)
	require.True(t, asked)
	for i := 0; i < 1500; i++ {
		cold := runtime.Request{Limit: l, Key: "cold-" + strconv.Itoa(i) + "@example.com"}
		askCounted(t, lim, cnt, cold)
		_, asked := askCounted(t, lim, cnt, cold)
		require.True(t, asked)
		_, asked = askCounted(t, lim, cnt, hot)
		require.False(t, asked, "the hot key must stay cached (after %d cold keys)", i+1)
		require.LessOrEqual(t, lim.deny.bytes(), budget)
	}
	t.Logf("%d denials held in %d bytes", lim.deny.len(), lim.deny.bytes())
	require.Less(t, lim.deny.len(), 1500)
	require.Equal(t, int64(lim.deny.len()), lim.deny.held.Load(), "held counts what the shards hold, evictions included")
}

// manualCache is a deny cache on a clock the test sets, filled directly.
type manualCache struct {
	*denyCache
	now atomic.Int64 // UnixMicro
}

// The cache's own methods take requests as the limiter resolves them; a
// manualCache's resolve them first.

func (m *manualCache) remember(reqs []runtime.Request, vs []verdict, err error, t0 int64) {
	m.denyCache.remember(reqs, resolvedOf(reqs, vs), err, t0)
}

func (m *manualCache) find(q runtime.Request, now int64) (verdict, bool) {
	var a ask
	resolveLimit(&a, &q)
	return m.denyCache.find(q, &a, now)
}

func (m *manualCache) hash(l runtime.Limit, key string) uint64 {
	q := runtime.Request{Limit: l, Key: key}
	var a ask
	resolveLimit(&a, &q)
	return m.denyCache.hash(q, &a)
}

func (m *manualCache) forget(q runtime.Request) {
	var a ask
	resolveLimit(&a, &q)
	m.denyCache.forget(q, &a)
}

// resolvedOf returns reqs resolved, without storage keys, with verdicts vs.
func resolvedOf(reqs []runtime.Request, vs []verdict) *resolvedCall {
	asks, _ := resolveLimits(nil, reqs, make([]verdict, len(reqs)))
	return &resolvedCall{now: -1, asks: asks, vs: vs}
}

func newManualCache(budget int) *manualCache {
	m := &manualCache{}
	m.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	m.denyCache = newDenyCache(budget, func() time.Time { return time.UnixMicro(m.now.Load()) })
	return m
}

// deny remembers a denial of cost 1 for l and key, in force for wait.
func (m *manualCache) deny(l runtime.Limit, key string, wait time.Duration) {
	reqs := []runtime.Request{{Limit: l, Key: key}}
	m.remember(reqs, []verdict{{retry: wait.Microseconds(), reset: wait.Microseconds()}}, nil, m.denyCache.now())
}

func (m *manualCache) has(l runtime.Limit, key string) bool {
	_, ok := m.find(runtime.Request{Limit: l, Key: key}, m.denyCache.now())
	return ok
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestDenyCacheBudget fills a 1 MiB cache with 100,000 distinct denials of
// keys of assorted lengths, asking for one hot key all along: the cache
// never charges more than its budget, the heap it really holds stays
// within the budget, and the hot key is never evicted.
func TestDenyCacheBudget(t *testing.T) {
	const budget = 1 << 20
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Hour, Max: 3}
	before := heapInUse()
	m := newManualCache(budget)
	m.deny(l, "hot@example.com", time.Hour)
	for i := 0; i < 100_000; i++ {
		key := "user-" + strconv.Itoa(i) + "@example.com" + strings.Repeat("x", i%97)
		m.deny(l, key, time.Hour)
		if i%16 == 0 {
			require.True(t, m.has(l, "hot@example.com"), "the hot key was evicted after %d keys", i)
		}
		if i%1000 == 0 {
			require.LessOrEqual(t, m.bytes(), budget)
		}
	}
	require.True(t, m.has(l, "hot@example.com"))
	require.LessOrEqual(t, m.bytes(), budget)
	held := heapInUse() - before
	t.Logf("%d denials held; %d bytes charged, %d bytes of heap", m.len(), m.bytes(), held)
	require.LessOrEqual(t, held, uint64(budget), "the cache holds more heap than its budget")
	require.Greater(t, m.len(), 2000, "a 1 MiB cache should hold thousands of denials")
	require.Equal(t, uintptr(128), unsafe.Sizeof(denyShard{}), "shards are two cache lines")
	goruntime.KeepAlive(m)
}

// TestDenyCacheExpiry checks that expired denials answer nothing and give
// their memory back as new denials come, without the cache being full.
func TestDenyCacheExpiry(t *testing.T) {
	m := newManualCache(1 << 20)
	l := runtime.Limit{Name: "exp", Window: time.Minute, Max: 1}
	for i := 0; i < 2000; i++ {
		m.deny(l, "old"+strconv.Itoa(i), time.Second)
	}
	require.Equal(t, 2000, m.len())
	require.True(t, m.has(l, "old7"))
	m.now.Add(time.Second.Microseconds())
	require.False(t, m.has(l, "old7"), "expired exactly at its end")
	for i := 0; i < 2000; i++ {
		m.deny(l, "new"+strconv.Itoa(i), time.Hour)
	}
	require.LessOrEqual(t, m.len(), 2000+2000/4, "most expired denials were dropped")
	require.Equal(t, int64(m.len()), m.held.Load(), "held counts what the shards hold, expired drops included")
	require.True(t, m.has(l, "new7"))
	for i := 0; i < 2000; i++ {
		require.False(t, m.has(l, "old"+strconv.Itoa(i)))
	}
}

// TestDenyCacheKeepsIdentities checks denials that share a hash (forced
// by a cache with one possible hash) stay apart, and that a weaker denial
// never replaces a stronger one of the same identity.
func TestDenyCacheKeepsIdentities(t *testing.T) {
	m := newManualCache(1 << 20)
	l := runtime.Limit{Name: "id", Window: time.Minute, Max: 1}
	m.deny(l, "a", time.Hour)
	// A denial with the same 64-bit hash and another identity, planted by
	// hand: it must never answer for "a".
	h := m.hash(l, "a")
	s := m.shard(h)
	s.mu.Lock()
	e := s.m[h]
	require.NotNil(t, e)
	e.id = l.Name + "b"
	s.mu.Unlock()
	require.False(t, m.has(l, "a"), "a denial of key b answered for key a")

	m.deny(l, "c", time.Hour)
	m.deny(l, "c", time.Minute) // weaker: kept as it was
	d, ok := m.find(runtime.Request{Limit: l, Key: "c"}, m.denyCache.now())
	require.True(t, ok)
	require.Equal(t, time.Hour, micros(d.retry))
}

// TestDenyCacheFindAllocatesNothing measures the hit path's allocations:
// none for the lookup or for Allow; Decide allocates the Each slice it
// returns.
func TestDenyCacheFindAllocatesNothing(t *testing.T) {
	m := newManualCache(1 << 20)
	l := runtime.Limit{Name: "allocs", Window: time.Minute, Max: 1}
	m.deny(l, "k", time.Hour)
	q := runtime.Request{Limit: l, Key: "k"}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, ok := m.find(q, m.denyCache.now()); !ok {
			t.Fatal("miss")
		}
	})
	require.Zero(t, allocs)

	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	_, err := lim.Decide(ctx, q)
	require.NoError(t, err)
	ds, err := lim.Decide(ctx, q)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceStore, ds.Source)
	decide := testing.AllocsPerRun(1000, func() {
		ds, err := lim.Decide(ctx, q)
		if err != nil || ds.Source != runtime.SourceDenyCache {
			t.Fatal(err, ds)
		}
	})
	allow := testing.AllocsPerRun(1000, func() {
		if d, err := lim.Allow(ctx, l, "k"); err != nil || d.Allowed {
			t.Fatal(err, d)
		}
	})
	t.Logf("allocations per local denial: Decide %v, Allow %v", decide, allow)
	require.LessOrEqual(t, decide, 1.0, "Decide may allocate its Each slice, nothing else")
	require.Zero(t, allow)
}

// TestDenyCacheConcurrent hammers a small cache from many goroutines with
// denials, lookups (through the hot pointer and the lock), replacements,
// forgets, evictions and a moving clock, for the race detector and the
// budget.
func TestDenyCacheConcurrent(t *testing.T) {
	const budget = 12 << 10
	m := newManualCache(budget)
	l := runtime.Limit{Name: "conc", Window: time.Minute, Max: 2}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for i := 0; i < 5000; i++ {
				key := "k" + strconv.Itoa(rng.IntN(300))
				switch rng.IntN(8) {
				case 0:
					m.now.Add(rng.Int64N(1000))
				case 1:
					m.deny(l, key, time.Duration(1+rng.Int64N(100))*time.Millisecond)
				case 2:
					// Replacing the hot denial while others read it.
					m.deny(l, "hot", time.Duration(1+rng.Int64N(100))*time.Millisecond)
				case 3:
					m.forget(runtime.Request{Limit: l, Key: key})
				default:
					m.has(l, key)
					m.has(l, "hot")
				}
			}
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, m.bytes(), budget)
}

// BenchmarkDenyCacheHotKey is 64 callers asking for one key that is always
// denied, with the deny cache on and off.
func BenchmarkDenyCacheHotKey(b *testing.B) {
	srv := redistest.StartServer(b)
	for _, bc := range []struct {
		name  string
		bytes int
	}{{"on", 1 << 20}, {"off", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			lim := New(srv.Client(b), WithPrefix("bench."+bc.name+":"), WithFailurePolicy(FailClosed),
				WithTimeout(5*time.Second), WithDenyCache(bc.bytes))
			l := runtime.Limit{Name: "bench.hot", Window: time.Hour, Max: 1}
			ctx := context.Background()
			if _, err := lim.Allow(ctx, l, "hot"); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(max(1, 64/goruntime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d, err := lim.Allow(ctx, l, "hot")
					if err != nil || d.Allowed {
						b.Fatal(err, d)
					}
				}
			})
		})
	}
}

// BenchmarkDenyCacheFind is the cache's lookup alone: 64 callers finding
// one denial.
func BenchmarkDenyCacheFind(b *testing.B) {
	m := newManualCache(1 << 20)
	l := runtime.Limit{Name: "bench.find", Window: time.Hour, Max: 1}
	m.deny(l, "hot@example.com", time.Hour)
	q := runtime.Request{Limit: l, Key: "hot@example.com"}
	now := m.denyCache.now()
	b.SetParallelism(max(1, 64/goruntime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := m.find(q, now); !ok {
				b.Fatal("miss")
			}
		}
	})
}

// TestDenyCacheForgetsWhatARefundContradicts plants a denial such as one
// made between an admission and its refund, on a Redis Ring where a call
// with limits on two hash tags is decided one tag after the other: the
// call that refunds reports room for the limit, and the limiter forgets
// the denial that says there is none.
func TestDenyCacheForgetsWhatARefundContradicts(t *testing.T) {
	srv := redistest.StartServer(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": srv.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	clock := newFakeClock()
	lim := New(ring, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	first, second := keysInTagOrder()
	wide := runtime.Limit{Name: "dc.refund.wide", Window: time.Hour, Max: 5}
	full := runtime.Limit{Name: "dc.refund.full", Window: time.Hour, Max: 1}
	d, err := lim.Allow(ctx, full, second)
	require.NoError(t, err)
	require.True(t, d.Allowed)

	planted := []runtime.Request{{Limit: wide, Key: first}}
	lim.deny.remember(planted, resolvedOf(planted, []verdict{{retry: time.Hour.Microseconds()}}), nil, lim.deny.now())
	ds, err := lim.Decide(ctx, planted...)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceDenyCache, ds.Source, "the planted denial answers")

	// wide is admitted on its tag, full denies on the next, wide's
	// admission is refunded and wide reports its room.
	ds, err = lim.Decide(ctx, runtime.Request{Limit: wide, Key: first}, runtime.Request{Limit: full, Key: second})
	require.NoError(t, err)
	require.Equal(t, runtime.SourceStore, ds.Source)
	require.False(t, ds.Allowed)
	require.True(t, ds.Each[0].Allowed)

	ds, err = lim.Decide(ctx, planted...)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceStore, ds.Source, "the contradicted denial is forgotten")
	require.True(t, ds.Allowed)
}
