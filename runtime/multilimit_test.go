package runtime

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Several limits on one call: every limit must allow, a denial consumes
// nothing anywhere, and the denial names the limit with the longest wait.
// Memory and a single Redis server decide all limits at once; a Redis
// Cluster decides slot by slot and refunds, which must look the same from
// outside. TestAlgorithmsCluster runs the cluster variants.

func TestMultiLimit(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			runMultiLimitSuite(t, func(t *testing.T, clock *fakeClock) MultiLimiter { return b.new(t, clock) }, true)
		})
	}
}

// runMultiLimitCluster is TestMultiLimit on the cluster of
// TestAlgorithmsCluster.
func runMultiLimitCluster(t *testing.T, newLimiter func(t *testing.T, clock *fakeClock) *RedisLimiter) {
	runMultiLimitSuite(t, func(t *testing.T, clock *fakeClock) MultiLimiter { return newLimiter(t, clock) }, false)
}

// runMultiLimitSuite runs every multi-limit test on one backend. exact says
// whether the storms' final check may compare a sliding log's times to the
// microsecond; on a cluster, refunds of concurrent calls leave gaps in
// the log's microseconds, which shift its waits by a few µs but never its
// counts.
func runMultiLimitSuite(t *testing.T, newLim func(t *testing.T, clock *fakeClock) MultiLimiter, exact bool) {
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

func allowAll(t *testing.T, lim MultiLimiter, reqs ...Request) Decisions {
	t.Helper()
	ds, err := lim.AllowAll(ctx, reqs...)
	require.NoError(t, err)
	require.Len(t, ds.Each, len(reqs))
	return ds
}

func testMultiDenial(t *testing.T, lim MultiLimiter, clock *fakeClock) {
	// 3 per minute per e-mail (sliding log), 5 per hour per IP (fixed
	// window); the fake clock starts on an hour boundary.
	perEmail := Limit{Name: "Multi.PerEmail", Window: time.Minute, Max: 3}
	perIP := Limit{Name: "Multi.PerIP", Window: time.Hour, Max: 5, Algorithm: FixedWindow}
	reqs := []Request{{Limit: perEmail, Key: "a@example.com"}, {Limit: perIP, Key: "198.51.100.7"}}
	for i := 0; i < 3; i++ {
		ds := allowAll(t, lim, reqs...)
		require.Equal(t, Decisions{Allowed: true, Denied: -1, Each: []Decision{
			{Allowed: true, Remaining: 2 - i, ResetAfter: time.Minute + time.Duration(i)*time.Microsecond},
			{Allowed: true, Remaining: 4 - i, ResetAfter: time.Hour},
		}}, ds, "call %d", i+1)
		require.Nil(t, ds.LimitError(reqs))
	}
	// The e-mail limit denies; the IP limit has room and keeps it however
	// often the call is retried.
	clock.Advance(10 * time.Second)
	for i := 0; i < 5; i++ {
		ds := allowAll(t, lim, reqs...)
		require.Equal(t, Decisions{Allowed: false, Denied: 0, Each: []Decision{
			{Remaining: 0, RetryAfter: 50 * time.Second, ResetAfter: 50*time.Second + 2*time.Microsecond},
			{Remaining: 2, ResetAfter: time.Hour - 10*time.Second},
		}}, ds, "retry %d", i)
		le := ds.LimitError(reqs)
		require.NotNil(t, le)
		require.Equal(t, perEmail, le.Limit)
		require.Equal(t, 50*time.Second, le.RetryAfter)
		require.ErrorIs(t, le, ErrLimited)
	}
	// Once the e-mail's minute has passed, the IP has exactly its 2 left.
	clock.Advance(50*time.Second + 2*time.Microsecond)
	for i := 0; i < 2; i++ {
		require.True(t, allowAll(t, lim, reqs...).Allowed, "call %d", i)
	}
	// Now the IP limit denies and the e-mail limit keeps its one unit.
	ds := allowAll(t, lim, reqs...)
	ipWait := time.Hour - time.Minute - 2*time.Microsecond
	require.Equal(t, Decisions{Allowed: false, Denied: 1, Each: []Decision{
		{Remaining: 1, ResetAfter: time.Minute + time.Microsecond},
		{Remaining: 0, RetryAfter: ipWait, ResetAfter: ipWait},
	}}, ds)
	require.Equal(t, perIP, ds.LimitError(reqs).Limit)
	// A cost of 2 on the e-mail: both deny, and the longer wait is named,
	// whatever the order of the requests.
	two := []Request{{Limit: perEmail, Key: "a@example.com", Cost: 2}, reqs[1]}
	ds = allowAll(t, lim, two...)
	require.Equal(t, 1, ds.Denied)
	require.Equal(t, time.Minute, ds.Each[0].RetryAfter)
	require.Equal(t, ipWait, ds.Each[1].RetryAfter)
	ds = allowAll(t, lim, two[1], two[0])
	require.Equal(t, 0, ds.Denied)
	require.Equal(t, perIP, ds.LimitError([]Request{two[1], two[0]}).Limit)
	// None of those denials took the e-mail's last unit.
	d, err := AllowN(ctx, lim, perEmail, "a@example.com", 1)
	require.NoError(t, err)
	require.Equal(t, Decision{Allowed: true, Remaining: 0, ResetAfter: time.Minute + 2*time.Microsecond}, d)
}

func testMultiTie(t *testing.T, lim MultiLimiter, clock *fakeClock) {
	a := Limit{Name: "Tie.A", Window: time.Minute, Max: 1, Algorithm: FixedWindow}
	b := Limit{Name: "Tie.B", Window: time.Minute, Max: 1, Algorithm: FixedWindow}
	reqs := []Request{{Limit: a, Key: "x"}, {Limit: b, Key: "y"}}
	require.True(t, allowAll(t, lim, reqs...).Allowed)
	ds := allowAll(t, lim, reqs...)
	require.Equal(t, 0, ds.Denied)
	ds = allowAll(t, lim, reqs[1], reqs[0])
	require.Equal(t, 0, ds.Denied)
	require.Equal(t, b, ds.LimitError([]Request{reqs[1], reqs[0]}).Limit)
}

// multiStorm is a set of limits that every call must pass, hammered from
// many goroutines.
type multiStorm struct {
	name string
	// reqs returns one call's requests.
	reqs func(rng *rand.Rand) []Request
}

func multiStorms() []multiStorm {
	perMinute := Limit{Name: "Storm.PerMinute", Window: time.Minute, Max: 3}
	perTen := Limit{Name: "Storm.PerTenMinutes", Window: 10 * time.Minute, Max: 10, Algorithm: SlidingWindow}
	emailGCRA := Limit{Name: "Storm.PerEmail", Window: time.Minute, Max: 2, Algorithm: GCRA}
	ipFixed := Limit{Name: "Storm.PerIP", Window: time.Minute, Max: 5, Algorithm: FixedWindow}
	emailTB := Limit{Name: "Storm.PerEmailTB", Window: time.Minute, Max: 4, Burst: 2, Algorithm: TokenBucket}
	ipLog := Limit{Name: "Storm.PerIPLog", Window: 2 * time.Minute, Max: 6}
	emails := []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com", "e@example.com"}
	ips := []string{"198.51.100.7", "203.0.113.9"}
	return []multiStorm{
		{"3 per minute and 10 per 10 minutes on one key", func(rng *rand.Rand) []Request {
			return []Request{{Limit: perMinute, Key: "user@example.com"}, {Limit: perTen, Key: "user@example.com"}}
		}},
		{"per e-mail gcra and per IP fixed window", func(rng *rand.Rand) []Request {
			return []Request{
				{Limit: emailGCRA, Key: emails[rng.IntN(len(emails))]},
				{Limit: ipFixed, Key: ips[rng.IntN(len(ips))], Cost: 1 + rng.IntN(2)},
			}
		}},
		{"per IP sliding log and per e-mail token bucket", func(rng *rand.Rand) []Request {
			return []Request{
				{Limit: ipLog, Key: ips[rng.IntN(len(ips))]},
				{Limit: emailTB, Key: emails[rng.IntN(len(emails))], Cost: 1 + rng.IntN(2)},
			}
		}},
	}
}

// stormCall is one call of a storm and its answer.
type stormCall struct {
	at   int64
	reqs []Request
	ds   Decisions
}

// runMultiStorm hammers lim in phases: the fake clock stands still while
// many goroutines call at once, then moves on by whole seconds. Every
// admission of a phase happened at the phase's time, so the callers'
// results can be audited exactly: each limit's bound over the admissions it
// saw, the naming of every denial, and at the end each limit's remaining
// quota, which must be what the admitted calls alone leave.
func runMultiStorm(t *testing.T, lim MultiLimiter, clock *fakeClock, s multiStorm, exact bool) {
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
				for i := 0; i < callsEach; i++ {
					reqs := s.reqs(grng)
					ds, err := lim.AllowAll(ctx, reqs...)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					calls = append(calls, stormCall{at: now, reqs: reqs, ds: ds})
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
	limits := map[lk]Limit{}
	adm := map[lk][]refAdmission{}
	var admitted, denied int
	for _, c := range calls {
		require.Len(t, c.ds.Each, len(c.reqs))
		if c.ds.Allowed {
			admitted++
			require.Equal(t, -1, c.ds.Denied)
			require.Nil(t, c.ds.LimitError(c.reqs))
			for i, r := range c.reqs {
				require.True(t, c.ds.Each[i].Allowed)
				k := lk{r.Limit.Name, r.Key}
				limits[k] = r.Limit
				adm[k] = append(adm[k], refAdmission{c.at, int64(r.cost())})
			}
			continue
		}
		denied++
		// No limit admitted; the one named waits longest (the first of
		// equals) and does wait; limits with room wait for nothing.
		longest := 0
		for i, d := range c.ds.Each {
			require.False(t, d.Allowed)
			if d.RetryAfter > c.ds.Each[longest].RetryAfter {
				longest = i
			}
		}
		require.Equal(t, longest, c.ds.Denied, "%+v", c.ds)
		require.Positive(t, c.ds.Each[c.ds.Denied].RetryAfter)
		le := c.ds.LimitError(c.reqs)
		require.NotNil(t, le)
		require.Equal(t, c.reqs[c.ds.Denied].Limit, le.Limit)
		require.Equal(t, c.ds.Each[c.ds.Denied].RetryAfter, le.RetryAfter)
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
		n := l.capacity()
		want := m.decide(now, int64(n))
		got, err := AllowN(ctx, lim, l, k.key, n)
		require.NoError(t, err)
		if !exact && l.algorithm() == SlidingLog {
			want.RetryAfter, want.ResetAfter, got.RetryAfter, got.ResetAfter = 0, 0, 0, 0
		}
		require.Equal(t, want, got, "limit %s key %s: quota left after the storm", k.name, k.key)
	}
}
