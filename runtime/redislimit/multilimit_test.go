package redislimit

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Several limits on one call: every limit must allow, a denial consumes
// nothing anywhere, and the denial names the limit with the longest wait.
// Memory and a single Redis server decide all limits at once; a Redis
// Cluster decides slot by slot and refunds, which must look the same from
// outside. TestAlgorithmsCluster runs the cluster variants.

// TestMultiLimit runs the suite on the memory limiter and on one Redis
// server, with the same expectations.
func TestMultiLimit(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			runMultiLimitSuite(t, func(t *testing.T, clock *fakeClock) runtime.Limiter { return b.new(t, clock) }, true)
		})
	}
}

// runMultiLimitCluster is TestMultiLimit on the cluster of
// TestAlgorithmsCluster.
func runMultiLimitCluster(t *testing.T, newLimiter func(t *testing.T, clock *fakeClock) *Limiter) {
	runMultiLimitSuite(t, func(t *testing.T, clock *fakeClock) runtime.Limiter { return newLimiter(t, clock) }, false)
}

// runMultiLimitSuite runs every multi-limit test on one backend. exact says
// whether the storms' final check may compare a sliding log's times to the
// microsecond; on a cluster, refunds of concurrent calls leave gaps in
// the log's microseconds, which shift its waits by a few µs but never its
// counts.
func runMultiLimitSuite(t *testing.T, newLim func(t *testing.T, clock *fakeClock) runtime.Limiter, exact bool) {
	t.Run("denial names the limit with the longest wait", func(t *testing.T) {
		clock := newFakeClock()
		testMultiDenial(t, newLim(t, clock), clock)
	})
	t.Run("ties name the first limit", func(t *testing.T) {
		clock := newFakeClock()
		testMultiTie(t, newLim(t, clock), clock)
	})
	for _, s := range multiStorms() {
		t.Run("storm "+s.name, func(t *testing.T) {
			clock := newFakeClock()
			runMultiStorm(t, newLim(t, clock), clock, s, exact)
		})
	}
}

func allowAll(t *testing.T, lim runtime.Limiter, reqs ...runtime.Request) runtime.Decisions {
	t.Helper()
	ds, err := lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	require.Len(t, ds.Each, len(reqs))
	return ds
}

// deniedIndex returns the index of the limit a denial must name: of the
// limits without room, the one with the longest RetryAfter, the first of
// equals; -1 when ds admits the call. (Decisions had a Denied field that
// said so; runtime.Enforce now names that limit in its *LimitError.)
func deniedIndex(ds runtime.Decisions) int {
	if ds.Allowed {
		return -1
	}
	i := -1
	for j, d := range ds.Each {
		if !d.Allowed && (i < 0 || d.RetryAfter > ds.Each[i].RetryAfter) {
			i = j
		}
	}
	return i
}

// answered is a runtime.Limiter that gives one answer, so that
// runtime.Enforce can be asked about a decision already made.
type answered runtime.Decisions

func (a answered) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions(a), nil
}

// limitError returns the *runtime.LimitError that runtime.Enforce makes of
// ds, the answer to reqs, or nil when Enforce admits the call.
func limitError(t *testing.T, reqs []runtime.Request, ds runtime.Decisions) *runtime.LimitError {
	t.Helper()
	err := runtime.Enforce(ctx, answered(ds), reqs...)
	if err == nil {
		return nil
	}
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, runtime.ErrLimited)
	return le
}

// requireNamed checks that a denial of reqs names limit i, with its
// decision, both from ds and through runtime.Enforce on lim itself (which
// decides again: a denial records nothing, so it must deny alike).
func requireNamed(t *testing.T, lim runtime.Limiter, reqs []runtime.Request, ds runtime.Decisions, i int) {
	t.Helper()
	require.Equal(t, i, deniedIndex(ds), "%+v", ds)
	le := limitError(t, reqs, ds)
	require.NotNil(t, le)
	require.Equal(t, reqs[i].Limit, le.Limit)
	require.Equal(t, ds.Each[i], le.Decision)
	err := runtime.Enforce(ctx, lim, reqs...)
	var again *runtime.LimitError
	require.ErrorAs(t, err, &again)
	require.Equal(t, *le, *again, "Enforce on the limiter names the same limit with the same decision")
}

func testMultiDenial(t *testing.T, lim runtime.Limiter, clock *fakeClock) {
	// 3 per minute per e-mail (sliding log), 5 per hour per IP (fixed
	// window); the fake clock starts on an hour boundary.
	perEmail := runtime.Limit{Name: "Multi.PerEmail", Window: time.Minute, Max: 3}
	perIP := runtime.Limit{Name: "Multi.PerIP", Window: time.Hour, Max: 5, Algorithm: runtime.FixedWindow}
	reqs := []runtime.Request{{Limit: perEmail, Key: "a@example.com"}, {Limit: perIP, Key: "198.51.100.7"}}
	for i := 0; i < 3; i++ {
		ds := allowAll(t, lim, reqs...)
		require.Equal(t, runtime.Decisions{Allowed: true, Each: []runtime.Decision{
			{Allowed: true, Remaining: 2 - i, ResetAfter: time.Minute + time.Duration(i)*time.Microsecond},
			{Allowed: true, Remaining: 4 - i, ResetAfter: time.Hour},
		}}, ds, "call %d", i+1)
		require.Equal(t, -1, deniedIndex(ds))
		require.Nil(t, limitError(t, reqs, ds))
	}
	// The e-mail limit denies; the IP limit has room, says so, and keeps
	// it however often the call is retried.
	clock.Advance(10 * time.Second)
	for i := 0; i < 5; i++ {
		ds := allowAll(t, lim, reqs...)
		require.Equal(t, runtime.Decisions{Allowed: false, Each: []runtime.Decision{
			{Allowed: false, Remaining: 0, RetryAfter: 50 * time.Second, ResetAfter: 50*time.Second + 2*time.Microsecond},
			{Allowed: true, Remaining: 2, ResetAfter: time.Hour - 10*time.Second},
		}}, ds, "retry %d", i)
		requireNamed(t, lim, reqs, ds, 0)
		le := limitError(t, reqs, ds)
		require.Equal(t, perEmail, le.Limit)
		require.Equal(t, 50*time.Second, le.Decision.RetryAfter)
		require.Equal(t, runtime.Decision{RetryAfter: 50 * time.Second, ResetAfter: time.Hour - 10*time.Second}, ds.Decision(),
			"the combined decision carries the denial")
	}
	// Once the e-mail's minute has passed, the IP has exactly its 2 left.
	clock.Advance(50*time.Second + 2*time.Microsecond)
	for i := 0; i < 2; i++ {
		require.True(t, allowAll(t, lim, reqs...).Allowed, "call %d", i)
	}
	// Now the IP limit denies and the e-mail limit has, and keeps, its
	// one unit.
	ds := allowAll(t, lim, reqs...)
	ipWait := time.Hour - time.Minute - 2*time.Microsecond
	require.Equal(t, runtime.Decisions{Allowed: false, Each: []runtime.Decision{
		{Allowed: true, Remaining: 1, ResetAfter: time.Minute + time.Microsecond},
		{Allowed: false, Remaining: 0, RetryAfter: ipWait, ResetAfter: ipWait},
	}}, ds)
	requireNamed(t, lim, reqs, ds, 1)
	require.Equal(t, perIP, limitError(t, reqs, ds).Limit)
	// A cost of 2 on the e-mail: both deny, and the longer wait is named,
	// whatever the order of the requests.
	two := []runtime.Request{{Limit: perEmail, Key: "a@example.com", Cost: 2}, reqs[1]}
	ds = allowAll(t, lim, two...)
	require.False(t, ds.Each[0].Allowed)
	require.False(t, ds.Each[1].Allowed)
	requireNamed(t, lim, two, ds, 1)
	require.Equal(t, time.Minute, ds.Each[0].RetryAfter)
	require.Equal(t, ipWait, ds.Each[1].RetryAfter)
	swapped := []runtime.Request{two[1], two[0]}
	ds = allowAll(t, lim, swapped...)
	requireNamed(t, lim, swapped, ds, 0)
	require.Equal(t, perIP, limitError(t, swapped, ds).Limit)
	// None of those denials took the e-mail's last unit.
	d, err := decideN(lim, perEmail, "a@example.com", 1)
	require.NoError(t, err)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Minute + 2*time.Microsecond}, d)
}

func testMultiTie(t *testing.T, lim runtime.Limiter, clock *fakeClock) {
	a := runtime.Limit{Name: "Tie.A", Window: time.Minute, Max: 1, Algorithm: runtime.FixedWindow}
	b := runtime.Limit{Name: "Tie.B", Window: time.Minute, Max: 1, Algorithm: runtime.FixedWindow}
	reqs := []runtime.Request{{Limit: a, Key: "x"}, {Limit: b, Key: "y"}}
	require.True(t, allowAll(t, lim, reqs...).Allowed)
	ds := allowAll(t, lim, reqs...)
	require.False(t, ds.Each[0].Allowed)
	require.False(t, ds.Each[1].Allowed)
	requireNamed(t, lim, reqs, ds, 0)
	swapped := []runtime.Request{reqs[1], reqs[0]}
	ds = allowAll(t, lim, swapped...)
	requireNamed(t, lim, swapped, ds, 0)
	require.Equal(t, b, limitError(t, swapped, ds).Limit)
}

// multiStorm is a set of limits that every call must pass, hammered from
// many goroutines.
type multiStorm struct {
	name string
	// reqs returns one call's requests.
	reqs func(rng *rand.Rand) []runtime.Request
}

func multiStorms() []multiStorm {
	perMinute := runtime.Limit{Name: "Storm.PerMinute", Window: time.Minute, Max: 3}
	perTen := runtime.Limit{Name: "Storm.PerTenMinutes", Window: 10 * time.Minute, Max: 10, Algorithm: runtime.SlidingWindow}
	emailGCRA := runtime.Limit{Name: "Storm.PerEmail", Window: time.Minute, Max: 2, Algorithm: runtime.GCRA}
	ipFixed := runtime.Limit{Name: "Storm.PerIP", Window: time.Minute, Max: 5, Algorithm: runtime.FixedWindow}
	emailTB := runtime.Limit{Name: "Storm.PerEmailTB", Window: time.Minute, Max: 4, Burst: 2, Algorithm: runtime.TokenBucket}
	ipLog := runtime.Limit{Name: "Storm.PerIPLog", Window: 2 * time.Minute, Max: 6}
	emails := []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com", "e@example.com"}
	ips := []string{"198.51.100.7", "203.0.113.9"}
	return []multiStorm{
		{"3 per minute and 10 per 10 minutes on one key", func(rng *rand.Rand) []runtime.Request {
			return []runtime.Request{{Limit: perMinute, Key: "user@example.com"}, {Limit: perTen, Key: "user@example.com"}}
		}},
		{"per e-mail gcra and per IP fixed window", func(rng *rand.Rand) []runtime.Request {
			return []runtime.Request{
				{Limit: emailGCRA, Key: emails[rng.IntN(len(emails))]},
				{Limit: ipFixed, Key: ips[rng.IntN(len(ips))], Cost: 1 + rng.Int64N(2)},
			}
		}},
		{"per IP sliding log and per e-mail token bucket", func(rng *rand.Rand) []runtime.Request {
			return []runtime.Request{
				{Limit: ipLog, Key: ips[rng.IntN(len(ips))]},
				{Limit: emailTB, Key: emails[rng.IntN(len(emails))], Cost: 1 + rng.Int64N(2)},
			}
		}},
	}
}

// stormCall is one call of a storm and its answer: the Decisions, and
// what runtime.Enforce made of them.
type stormCall struct {
	at   int64
	reqs []runtime.Request
	ds   runtime.Decisions
	err  error
}

// lastAnswer is a wrapper such as a user writes: it embeds the limiter and
// overrides Decide, here to keep the answer that runtime.Enforce turns
// into an error. One goroutine uses it at a time.
type lastAnswer struct {
	runtime.Limiter
	ds runtime.Decisions
}

func (a *lastAnswer) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	ds, err := a.Limiter.Decide(ctx, reqs...)
	a.ds = ds
	return ds, err
}

// runMultiStorm hammers lim in phases: the fake clock stands still while
// many goroutines call at once, then moves on by whole seconds. Every
// admission of a phase happened at the phase's time, so the callers'
// results can be audited exactly: each limit's bound over the admissions it
// saw, the naming of every denial, and at the end each limit's remaining
// quota, which must be what the admitted calls alone leave.
func runMultiStorm(t *testing.T, lim runtime.Limiter, clock *fakeClock, s multiStorm, exact bool) {
	const phases, goroutines, callsEach = 60, 12, 3
	rng := rand.New(rand.NewPCG(uint64(len(s.name)), 42))
	var calls []stormCall
	for p := 0; p < phases; p++ {
		clock.Advance(time.Duration(rng.IntN(31)) * time.Second)
		now := clock.Now().UnixMicro()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			seed := rng.Uint64()
			wg.Add(1)
			go func() {
				defer wg.Done()
				grng := rand.New(rand.NewPCG(seed, 1))
				w := &lastAnswer{Limiter: lim}
				for i := 0; i < callsEach; i++ {
					reqs := s.reqs(grng)
					err := runtime.Enforce(ctx, w, reqs...)
					if err != nil && !errors.Is(err, runtime.ErrLimited) {
						t.Error(err)
						return
					}
					mu.Lock()
					calls = append(calls, stormCall{at: now, reqs: reqs, ds: w.ds, err: err})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}

	type lk struct {
		name, key string
	}
	limits := map[lk]runtime.Limit{}
	adm := map[lk][]refAdmission{}
	var admitted, denied int
	for _, c := range calls {
		require.Len(t, c.ds.Each, len(c.reqs))
		if c.ds.Allowed {
			admitted++
			require.NoError(t, c.err)
			require.Equal(t, -1, deniedIndex(c.ds))
			for i, r := range c.reqs {
				require.True(t, c.ds.Each[i].Allowed)
				k := lk{r.Limit.Name, r.Key}
				limits[k] = r.Limit
				adm[k] = append(adm[k], refAdmission{c.at, costOf(r)})
			}
			continue
		}
		denied++
		// Each limit says truthfully whether it had room: those with room
		// wait for nothing, those without do wait, and there is at least
		// one of those. The one named waits longest (the first of equals).
		for i, d := range c.ds.Each {
			require.Equal(t, d.RetryAfter == 0, d.Allowed, "limit %d of %+v", i, c.ds)
		}
		longest := deniedIndex(c.ds)
		require.GreaterOrEqual(t, longest, 0, "a denied call must have a limit without room: %+v", c.ds)
		require.Positive(t, c.ds.Each[longest].RetryAfter)
		var le *runtime.LimitError
		require.ErrorAs(t, c.err, &le)
		require.Equal(t, c.reqs[longest].Limit, le.Limit)
		require.Equal(t, c.ds.Each[longest], le.Decision)
	}
	t.Logf("%s: %d calls admitted, %d denied, over %d limit keys", s.name, admitted, denied, len(adm))
	require.Positive(t, admitted)
	require.Positive(t, denied)

	// No limit was ever exceeded.
	keys := make([]lk, 0, len(limits))
	for k := range limits {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b lk) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.key, b.key))
	})
	for _, k := range keys {
		require.Empty(t, refViolation(limits[k], adm[k]), "limit %s key %s", k.name, k.key)
	}

	// Denied calls consumed nothing: replaying only the admitted calls in
	// the reference model predicts each limit's state exactly. Half a
	// second later, so that no window edge falls on a phase's time.
	clock.Advance(500 * time.Millisecond)
	now := clock.Now().UnixMicro()
	for _, k := range keys {
		l := limits[k]
		m := newRefModel(l)
		for _, a := range adm[k] {
			require.True(t, m.decide(a.at, a.cost).Allowed, "the model disagrees with an admission of %s %s", k.name, k.key)
		}
		n := l.Capacity()
		want := m.decide(now, int64(n))
		got, err := decideN(lim, l, k.key, n)
		require.NoError(t, err)
		if !exact && algorithmOf(l) == runtime.SlidingLog {
			want.RetryAfter, want.ResetAfter, got.RetryAfter, got.ResetAfter = 0, 0, 0, 0
		}
		require.Equal(t, want, got, "limit %s key %s: quota left after the storm", k.name, k.key)
	}
}
