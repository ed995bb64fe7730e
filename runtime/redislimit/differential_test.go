package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// The differential tests drive a memlimit.Limiter and a Limiter with
// the same long random sequence of calls on the same fake clock, through
// their public API (Allow and Decide, as any caller would), and require
// identical answers at every step: the same runtime.Decision or
// runtime.Decisions, and the same error or none. The memory twins and the
// Lua scripts are two implementations of one specification, so any
// difference is a bug in one of them.

// diffHarness runs each call on both limiters and compares.
type diffHarness struct {
	t     *testing.T
	clock *fakeClock
	mem   *memlimit.Limiter
	red   *Limiter
	trail []string
}

func (h *diffHarness) note(s string) {
	h.trail = append(h.trail, s)
	if len(h.trail) > 200 {
		h.trail = h.trail[100:]
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func (h *diffHarness) mismatch(step int, what string, mem, red any) {
	h.t.Helper()
	tail := h.trail[max(0, len(h.trail)-100):]
	h.t.Fatalf("step %d: memory and redis disagree on %s at t=%d\n memory: %+v\n redis:  %+v\nlast steps:\n%s",
		step, what, h.clock.Now().UnixMicro(), mem, red, strings.Join(tail, "\n"))
}

// single decides one limit of cost n (0 means 1) on both. Calls of cost 1
// at even steps go through Allow, the others through Decide, so that both
// entry points are compared. An off limit goes through Decide: Allow is
// asked of limits that are consulted.
func (h *diffHarness) single(step int, l runtime.Limit, key string, n int) runtime.Decision {
	h.t.Helper()
	if n == 1 && step%2 == 0 && l.Mode != runtime.ModeOff {
		dm, em := h.mem.Allow(ctx, l, key)
		dr, er := h.red.Allow(ctx, l, key)
		what := fmt.Sprintf("Allow(%s %s max=%d burst=%d window=%v, %q)", l.Name, algorithmOf(l), l.Max, l.Burst, l.Window, key)
		h.note(fmt.Sprintf("step %d t=%d %s -> %+v err=%v", step, h.clock.Now().UnixMicro(), what, dm, em))
		if dm != dr || errText(em) != errText(er) {
			h.mismatch(step, what, fmt.Sprintf("%+v err=%v", dm, em), fmt.Sprintf("%+v err=%v", dr, er))
		}
		h.checkDecision(step, what, dm, em)
		return dm
	}
	ds := h.all(step, []runtime.Request{{Limit: l, Key: key, Cost: int64(n)}})
	if ds.Each == nil {
		return runtime.Decision{}
	}
	return ds.Each[0]
}

// all decides reqs on both with Decide.
func (h *diffHarness) all(step int, reqs []runtime.Request) runtime.Decisions {
	h.t.Helper()
	dm, em := h.mem.Decide(ctx, reqs...)
	dr, er := h.red.Decide(ctx, reqs...)
	var parts []string
	for _, r := range reqs {
		parts = append(parts, fmt.Sprintf("%s/%s/%s/%q/%d", r.Limit.Name, algorithmOf(r.Limit), r.Limit.Mode, r.Key, r.Cost))
	}
	what := "Decide(" + strings.Join(parts, ", ") + ")"
	h.note(fmt.Sprintf("step %d t=%d %s -> %+v err=%v", step, h.clock.Now().UnixMicro(), what, dm, em))
	if fmt.Sprintf("%+v", dm) != fmt.Sprintf("%+v", dr) || errText(em) != errText(er) {
		h.mismatch(step, what, fmt.Sprintf("%+v err=%v", dm, em), fmt.Sprintf("%+v err=%v", dr, er))
	}
	if em != nil {
		if dm.Allowed || dm.Each != nil {
			h.t.Fatalf("step %d: %s: an error came with a decision: %+v", step, what, dm)
		}
		return dm
	}
	// Each limit says truthfully whether it had room, and the call is
	// admitted exactly when all its enforced limits had.
	if len(dm.Each) != len(reqs) {
		h.t.Fatalf("step %d: %s: %d decisions for %d requests", step, what, len(dm.Each), len(reqs))
	}
	all := true
	for i, d := range dm.Each {
		h.checkDecision(step, what, d, nil)
		switch reqs[i].Limit.Mode {
		case runtime.ModeEnforce:
			all = all && d.Allowed
		case runtime.ModeOff:
			if off := (runtime.Decision{Allowed: true, Remaining: reqs[i].Limit.Capacity()}); d != off {
				h.t.Fatalf("step %d: %s: limit %d is off, yet decided %+v", step, what, i, d)
			}
		}
	}
	if dm.Allowed != all {
		h.t.Fatalf("step %d: %s: Allowed %v, but the limits say %+v", step, what, dm.Allowed, dm.Each)
	}
	return dm
}

// checkDecision checks what every decision promises: a limit without room
// says how long to wait, one with room does not.
func (h *diffHarness) checkDecision(step int, what string, d runtime.Decision, err error) {
	h.t.Helper()
	if err == nil && (d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || d.ResetAfter < 0 || d.Remaining < 0) {
		h.t.Fatalf("step %d: %s: inconsistent decision %+v", step, what, d)
	}
}

// diffScenario is one random sequence: which limits and keys single calls
// and multi-limit calls draw from.
type diffScenario struct {
	seed   uint64
	steps  int
	single []runtime.Limit // limits for one-limit calls
	multi  []runtime.Limit // limits that several-limit calls mix
	keys   []string
	// pAll is the share of steps that are several-limit calls.
	pAll float64
	// backwards allows the clock to jump back now and then.
	backwards bool
	// modes gives each request after the first touches a random mode, so
	// that a limit is enforced in one call and shadow or off in another.
	modes bool
	// settle makes some single calls holds, settled later on both at the
	// same random use (none, less, as reserved, more, past the capacity),
	// and peeks now and then.
	settle bool
}

// diffHold is one call held on both limiters.
type diffHold struct {
	mem, red runtime.Hold
	capacity int64
	what     string // the call, for the trail
}

// hold holds one call of cost n on both and compares; it returns the
// pair when the call was admitted.
func (h *diffHarness) hold(step int, l runtime.Limit, key string, n int) (diffHold, bool) {
	h.t.Helper()
	r := runtime.Request{Limit: l, Key: key, Cost: int64(n)}
	dm, hm, em := h.mem.Hold(ctx, r)
	dr, hr, er := h.red.Hold(ctx, r)
	what := fmt.Sprintf("Hold(%s/%s/%q/%d)", l.Name, algorithmOf(l), key, n)
	h.note(fmt.Sprintf("step %d t=%d %s -> %+v err=%v", step, h.clock.Now().UnixMicro(), what, dm, em))
	if fmt.Sprintf("%+v", dm) != fmt.Sprintf("%+v", dr) || errText(em) != errText(er) || (hm == nil) != (hr == nil) {
		h.mismatch(step, what, fmt.Sprintf("%+v err=%v hold=%v", dm, em, hm != nil), fmt.Sprintf("%+v err=%v hold=%v", dr, er, hr != nil))
	}
	if hm == nil {
		return diffHold{}, false
	}
	return diffHold{mem: hm, red: hr, capacity: int64(l.Capacity()), what: what}, true
}

// settle settles p on both at used and compares the errors.
func (h *diffHarness) settle(step int, p diffHold, used int64) {
	h.t.Helper()
	em, er := p.mem.Settle(ctx, used), p.red.Settle(ctx, used)
	what := fmt.Sprintf("Settle(%d) of %s", used, p.what)
	h.note(fmt.Sprintf("step %d t=%d %s -> %v", step, h.clock.Now().UnixMicro(), what, em))
	if errText(em) != errText(er) {
		h.mismatch(step, what, errText(em), errText(er))
	}
	if em != nil {
		h.t.Fatalf("step %d: %s: %v", step, what, em)
	}
}

// peek peeks at one limit's key on both and compares.
func (h *diffHarness) peek(step int, l runtime.Limit, key string, n int) {
	h.t.Helper()
	r := runtime.Request{Limit: l, Key: key, Cost: int64(n)}
	dm, em := h.mem.Peek(ctx, r)
	dr, er := h.red.Peek(ctx, r)
	what := fmt.Sprintf("Peek(%s/%s/%q/%d)", l.Name, algorithmOf(l), key, n)
	h.note(fmt.Sprintf("step %d t=%d %s -> %+v err=%v", step, h.clock.Now().UnixMicro(), what, dm, em))
	if fmt.Sprintf("%+v", dm) != fmt.Sprintf("%+v", dr) || errText(em) != errText(er) {
		h.mismatch(step, what, fmt.Sprintf("%+v err=%v", dm, em), fmt.Sprintf("%+v err=%v", dr, er))
	}
}

// diffLimits returns a few limits of algo with different shapes. Windows
// are long for the reason given at modelWalkLimits.
func diffLimits(algo runtime.Algorithm) []runtime.Limit {
	const day = 24 * time.Hour
	tag := string(algo)
	return []runtime.Limit{
		{Name: tag + "-a", Window: time.Hour, Max: 5, Algorithm: algo},
		{Name: tag + "-b", Window: day + 7*time.Microsecond, Max: 13, Burst: 4, Algorithm: algo},
		{Name: tag + "-c", Window: 3*time.Hour + 1*time.Microsecond, Max: 2, Burst: 9, Algorithm: algo},
	}
}

func mixedLimits() []runtime.Limit {
	var out []runtime.Limit
	for _, algo := range runtime.Algorithms() {
		out = append(out, diffLimits(algo)[:2]...)
	}
	return out
}

// run plays the scenario on h.
func (s diffScenario) run(h *diffHarness) {
	rng := rand.New(rand.NewPCG(s.seed, 0xd1ff))
	// Touch every (limit, key) first. A memlimit.Limiter forgets a key once
	// nothing in it counts, and only does so when it creates another key;
	// Redis forgets on its own (real) clock. A clock jumping back could
	// then find one backend remembering what the other forgot, which is
	// not what this test is about, so no key is created after this.
	step := 0
	seen := map[string]bool{}
	for _, l := range append(append([]runtime.Limit(nil), s.single...), s.multi...) {
		for _, k := range s.keys {
			if id := l.Name + "\x00" + k; !seen[id] {
				seen[id] = true
				h.single(step, l, k, 1)
				step++
			}
		}
	}

	cost := func(l runtime.Limit) int {
		c := l.Capacity()
		switch r := rng.Float64(); {
		case r < 0.65:
			return 1
		case r < 0.95:
			return 1 + rng.IntN(c)
		case r < 0.98:
			return c + 1 + rng.IntN(3) // an error on both
		default:
			return -rng.IntN(2) // 0 means 1; -1 is an error on both
		}
	}
	mode := func() runtime.Mode {
		if !s.modes {
			return runtime.ModeEnforce
		}
		switch r := rng.Float64(); {
		case r < 0.25:
			return runtime.ModeShadow
		case r < 0.4:
			return runtime.ModeOff
		}
		return runtime.ModeEnforce
	}
	// shadowed counts the admitted calls in which a shadow limit had no
	// room.
	var allowed, denied, errs, back, shadowed, settled int
	var pending []diffHold
	for ; step < s.steps; step++ {
		if s.settle && len(pending) > 0 && rng.Float64() < 0.3 {
			i := rng.IntN(len(pending))
			p := pending[i]
			pending = slices.Delete(pending, i, i+1)
			var used int64
			switch rng.IntN(4) {
			case 0:
			case 1:
				used = p.capacity + 1
			default:
				used = rng.Int64N(p.capacity + 1)
			}
			h.settle(step, p, used)
			settled++
			continue
		}
		// The clock moves on the scale of a random limit's window.
		l := s.single[rng.IntN(len(s.single))]
		w := l.Window.Microseconds()
		switch r := rng.Float64(); {
		case r < 0.40:
		case r < 0.50:
			h.clock.Advance(time.Microsecond)
		case r < 0.87:
			h.clock.Advance(us(rng.Int64N(w/int64(l.Max) + 2)))
		case r < 0.95 || !s.backwards:
			h.clock.Advance(us(rng.Int64N(2*w + 1)))
		default:
			h.clock.Advance(-us(rng.Int64N(w/2 + 1)))
			back++
		}

		if rng.Float64() >= s.pAll {
			key := s.keys[rng.IntN(len(s.keys))]
			n := cost(l)
			l.Mode = mode()
			if s.settle && n >= 1 && n <= l.Capacity() {
				switch r := rng.Float64(); {
				case r < 0.1:
					h.peek(step, l, key, n)
					continue
				case r < 0.6:
					if p, ok := h.hold(step, l, key, n); ok {
						pending = append(pending, p)
						allowed++
					} else {
						denied++
					}
					continue
				}
			}
			d := h.single(step, l, key, n)
			switch {
			case n < 0 || n > l.Capacity():
				errs++
			case !d.Allowed && l.Mode == runtime.ModeShadow:
				shadowed++
			case d.Allowed:
				allowed++
			default:
				denied++
			}
			continue
		}
		reqs := make([]runtime.Request, 2+rng.IntN(2))
		for i := range reqs {
			ml := s.multi[rng.IntN(len(s.multi))]
			ml.Mode = mode()
			reqs[i] = runtime.Request{Limit: ml, Key: s.keys[rng.IntN(len(s.keys))], Cost: int64(cost(ml))}
		}
		ds := h.all(step, reqs)
		switch {
		case ds.Each == nil:
			errs++
		case ds.Allowed:
			allowed++
			if slices.ContainsFunc(ds.Each, func(d runtime.Decision) bool { return !d.Allowed }) {
				shadowed++
			}
		default:
			denied++
		}
	}
	h.t.Logf("%d steps: %d admitted (%d with a shadow limit out of room), %d denied, %d errors; the clock went back %d times",
		s.steps, allowed, shadowed, denied, errs, back)
	if s.modes {
		require.Positive(h.t, shadowed)
	}
	if s.settle {
		require.Positive(h.t, settled)
	}
	require.Positive(h.t, allowed)
	require.Positive(h.t, denied)
	require.Positive(h.t, errs)
}

func newDiffHarness(t *testing.T, client redis.UniversalClient) *diffHarness {
	clock := newFakeClock()
	return &diffHarness{
		t:     t,
		clock: clock,
		mem:   memlimit.New(memlimit.WithClock(clock.Now)),
		// The deny cache is off: the scripts' answers are compared exactly.
		red: New(client, WithClock(clock.Now), WithPrefix("diff:"+t.Name()+":"),
			WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0)),
	}
}

// TestDifferential compares the backends on one Redis server: for each
// algorithm, single calls on its limits with several-limit calls mixing in
// the others; then several-limit calls alone over every algorithm.
func TestDifferential(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	keys := []string{"a", "b", "c"}
	for i, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			diffScenario{seed: uint64(i + 1), steps: 3000, single: diffLimits(algo), multi: mixedLimits(),
				keys: keys, pAll: 0.2, backwards: true}.run(newDiffHarness(t, client))
		})
	}
	t.Run("several limits", func(t *testing.T) {
		diffScenario{seed: 99, steps: 3000, single: mixedLimits(), multi: mixedLimits(),
			keys: keys, pAll: 1, backwards: true}.run(newDiffHarness(t, client))
	})
	for i, algo := range runtime.Algorithms() {
		t.Run(string(algo)+"/settled", func(t *testing.T) {
			diffScenario{seed: uint64(i + 61), steps: 3000, single: diffLimits(algo), multi: mixedLimits(),
				keys: keys, pAll: 0.1, backwards: true, settle: true}.run(newDiffHarness(t, client))
		})
	}
	t.Run("modes", func(t *testing.T) {
		diffScenario{seed: 41, steps: 3000, single: mixedLimits(), multi: mixedLimits(),
			keys: keys, pAll: 0.7, backwards: true, modes: true}.run(newDiffHarness(t, client))
	})
	t.Run("calendar", func(t *testing.T) {
		// Calendar limits in several-limit calls, with every mode, while
		// the clock moves by up to two days at a time, now and then back.
		diffScenario{seed: 46, steps: 3000, single: diffLimits(runtime.FixedWindow), multi: append(mixedLimits(), calendarDiffLimits()...),
			keys: keys, pAll: 0.7, backwards: true, modes: true}.run(newDiffHarness(t, client))
	})
}

// calendarDiffLimits returns calendar limits of each period, in zones with
// daylight-saving changes (Santiago's skipping midnight).
func calendarDiffLimits() []runtime.Limit {
	return []runtime.Limit{
		calLimit("cal-d", runtime.Day, "Europe/Berlin", 5),
		calLimit("cal-w", runtime.Week, "America/Santiago", 9),
		calLimit("cal-m", runtime.Month, "", 20),
		calLimit("cal-y", runtime.Year, "Asia/Tokyo", 40),
	}
}

// TestAlgorithmsCluster runs the algorithm and multi-limit suites on one
// Redis Cluster, which is expensive to start, shared by every subtest.
func TestAlgorithmsCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	client := cl.Client(t)
	newLimiter := func(t *testing.T, clock *fakeClock) *Limiter {
		// The deny cache is off: these tests expect the scripts' exact
		// answers, and a storm's refunds across slots are the one case
		// where the cache may deny what Redis would admit.
		return New(client, WithClock(clock.Now), WithPrefix("algc:"+t.Name()+":"),
			WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
	}

	t.Run("differential several limits across slots", func(t *testing.T) {
		// Distinct keys have distinct hash tags, so every call with two
		// keys takes the cluster path: check and commit slot by slot,
		// refunding earlier slots when a later one denies. The clock only
		// moves forward here: a commit that is refunded still leaves its
		// time on its slot (a token bucket's refill time, a fixed window's
		// index, a GCRA's arrival time floor), exactly as a commit from a
		// clock running ahead does, so a clock that then goes back finds
		// the two backends in different states.
		keys := []string{"a@example.com", "b@example.com", "198.51.100.7", "203.0.113.9"}
		tags := map[string]bool{}
		for _, k := range keys {
			tags[string(appendTag(nil, k))] = true
		}
		require.Len(t, tags, len(keys))
		diffScenario{seed: 7, steps: 2000, single: mixedLimits(), multi: mixedLimits(),
			keys: keys, pAll: 0.9, backwards: false}.run(newDiffHarness(t, client))
		t.Run("settled", func(t *testing.T) {
			diffScenario{seed: 62, steps: 2000, single: mixedLimits(), multi: mixedLimits(),
				keys: keys, pAll: 0.2, backwards: false, settle: true}.run(newDiffHarness(t, client))
		})
		t.Run("modes", func(t *testing.T) {
			diffScenario{seed: 8, steps: 2000, single: mixedLimits(), multi: mixedLimits(),
				keys: keys, pAll: 0.9, backwards: false, modes: true}.run(newDiffHarness(t, client))
		})
		t.Run("calendar", func(t *testing.T) {
			diffScenario{seed: 47, steps: 2000, single: diffLimits(runtime.FixedWindow), multi: append(mixedLimits(), calendarDiffLimits()...),
				keys: keys, pAll: 0.9, backwards: false, modes: true}.run(newDiffHarness(t, client))
		})
	})
	t.Run("model walks", func(t *testing.T) {
		for i, l := range modelWalkLimits() {
			t.Run(l.Name, func(t *testing.T) {
				clock := newFakeClock()
				runModelWalk(t, newLimiter(t, clock), clock, l, uint64(500+i), 300)
			})
		}
	})
	t.Run("multi-limit", func(t *testing.T) {
		runMultiLimitCluster(t, newLimiter)
	})
	t.Run("concurrent bounds", func(t *testing.T) {
		admin := cl.Masters()[0].Client(t)
		serverNow := func() int64 {
			// Every node runs on this host, so any master's clock will do.
			tm, err := admin.Time(context.Background()).Result()
			require.NoError(t, err)
			return tm.UnixMicro()
		}
		var lims []runtime.Limiter
		for i := 0; i < 3; i++ {
			lims = append(lims, New(cl.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second)))
		}
		for _, algo := range runtime.Algorithms() {
			t.Run(string(algo), func(t *testing.T) {
				runConcurrentBound(t, algo, lims, serverNow)
			})
		}
	})
}
