package redislimit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// modeLimit is one limit of a modeCase; key is an index into the case's
// keys, which are in the order their cluster groups are decided.
type modeLimit struct {
	name string
	mode runtime.Mode
	max  int
	algo runtime.Algorithm
	key  int
}

// modeReq asks limit (an index into the case's limits) at cost.
type modeReq struct {
	limit int
	cost  int64
}

type modeCase struct {
	name   string
	limits []modeLimit
	calls  [][]modeReq
}

var (
	S, E, O = runtime.ModeShadow, runtime.ModeEnforce, runtime.ModeOff
	sl, sw  = runtime.SlidingLog, runtime.SlidingWindow
	fw, tb  = runtime.FixedWindow, runtime.TokenBucket
)

// repeat returns n copies of call.
func repeat(n int, call ...modeReq) [][]modeReq {
	out := make([][]modeReq, n)
	for i := range out {
		out[i] = call
	}
	return out
}

// modeCases mix every mode alone and with the others, costs above 1,
// several keys, and (on a cluster, where keys 0, 1 and 2 are decided one
// group after another in that order) groups of shadow limits only and
// refunds of groups that recorded some of their shadow limits only.
var modeCases = []modeCase{
	{
		name:   "enforced only",
		limits: []modeLimit{{"e", E, 2, sl, 0}},
		calls:  repeat(3, modeReq{0, 1}),
	},
	{
		name:   "shadow alone",
		limits: []modeLimit{{"s", S, 2, sl, 0}},
		calls:  repeat(4, modeReq{0, 1}),
	},
	{
		name:   "off alone",
		limits: []modeLimit{{"o", O, 1, fw, 0}},
		calls:  repeat(3, modeReq{0, 1}),
	},
	{
		name:   "shadow and off",
		limits: []modeLimit{{"s", S, 1, tb, 0}, {"o", O, 1, sl, 0}},
		calls:  repeat(3, modeReq{0, 1}, modeReq{1, 1}),
	},
	{
		name:   "enforced with a shadow limit out of room",
		limits: []modeLimit{{"e", E, 3, sl, 0}, {"s", S, 1, tb, 0}},
		calls:  repeat(5, modeReq{0, 1}, modeReq{1, 1}),
	},
	{
		name:   "a denial records nothing in the shadow limit",
		limits: []modeLimit{{"e", E, 1, fw, 0}, {"s", S, 3, sw, 0}},
		calls:  repeat(3, modeReq{0, 1}, modeReq{1, 1}),
	},
	{
		name:   "every mode, costs above 1",
		limits: []modeLimit{{"e", E, 5, fw, 0}, {"s", S, 3, sw, 0}, {"o", O, 3, tb, 0}},
		calls:  repeat(4, modeReq{0, 2}, modeReq{1, 2}, modeReq{2, 3}),
	},
	{
		name: "several keys",
		limits: []modeLimit{
			{"e", E, 4, sl, 0}, {"e", E, 2, sl, 1}, {"s", S, 1, tb, 2}, {"e", O, 1, sl, 2}, {"s", S, 3, fw, 0},
		},
		calls: repeat(4, modeReq{0, 1}, modeReq{1, 1}, modeReq{2, 1}, modeReq{3, 1}, modeReq{4, 2}),
	},
	{
		name:   "a group of shadow limits only never denies",
		limits: []modeLimit{{"e", E, 2, sl, 0}, {"s", S, 1, sl, 1}, {"t", S, 1, tb, 2}},
		calls:  repeat(3, modeReq{0, 1}, modeReq{1, 1}, modeReq{2, 1}),
	},
	{
		name:   "a later group's denial refunds an earlier shadow limit's admission",
		limits: []modeLimit{{"s", S, 3, tb, 0}, {"e", E, 1, fw, 1}},
		calls:  repeat(3, modeReq{0, 1}, modeReq{1, 1}),
	},
	{
		name: "refunds undo only what an earlier group recorded",
		limits: []modeLimit{
			{"a", E, 3, sl, 0}, {"full", S, 1, tb, 0}, {"room", S, 5, sl, 0}, {"b", E, 1, fw, 1}, {"o", O, 1, tb, 1},
		},
		calls: [][]modeReq{
			{{1, 1}, {3, 1}},
			{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}},
			{{0, 2}, {1, 1}},
			{{2, 1}},
		},
	},
}

// modeModel is what a call records, limit by limit: units used, as none
// of the cases lets time pass.
type modeModel struct {
	limits []modeLimit
	used   []int64
}

// decide returns the Decisions a call must get, with RetryAfter and
// ResetAfter left out, and records it.
func (m *modeModel) decide(call []modeReq) runtime.Decisions {
	ds := runtime.Decisions{Allowed: true, Each: make([]runtime.Decision, len(call))}
	room := make([]bool, len(call))
	for j, q := range call {
		l := m.limits[q.limit]
		room[j] = l.mode == O || m.used[q.limit]+q.cost <= int64(l.max)
		if !room[j] && l.mode == E {
			ds.Allowed = false
		}
	}
	for j, q := range call {
		l := m.limits[q.limit]
		if ds.Allowed && room[j] && l.mode != O {
			m.used[q.limit] += q.cost
		}
		rem := int64(l.max) - m.used[q.limit]
		if l.mode == O {
			rem = int64(l.max)
		}
		ds.Each[j] = runtime.Decision{Allowed: room[j], Remaining: int(rem)}
	}
	return ds
}

// requests returns a call's requests; probe asks every limit that is not
// off at cost 1 in shadow mode, which reports its room without denying.
func (c modeCase) requests(call []modeReq, keys []string, probe bool) []runtime.Request {
	reqs := make([]runtime.Request, len(call))
	for j, q := range call {
		l := c.limits[q.limit]
		reqs[j] = runtime.Request{
			Limit: runtime.Limit{Name: "modes." + l.name, Window: time.Minute, Max: l.max, Algorithm: l.algo, Mode: l.mode},
			Key:   keys[l.key],
			Cost:  q.cost,
		}
		if probe {
			reqs[j].Limit.Mode, reqs[j].Cost = S, 1
		}
	}
	return reqs
}

// probes returns one call of cost 1 per limit that is not off.
func (c modeCase) probes() [][]modeReq {
	var out [][]modeReq
	for i, l := range c.limits {
		if l.mode != O {
			out = append(out, []modeReq{{i, 1}})
		}
	}
	return out
}

// seenLimiter passes calls to a Limiter and keeps the last Decisions.
type seenLimiter struct {
	runtime.Limiter
	mu   sync.Mutex
	reqs []runtime.Request
	ds   runtime.Decisions
}

func (s *seenLimiter) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	ds, err := s.Limiter.Decide(ctx, reqs...)
	s.mu.Lock()
	s.reqs, s.ds = slices.Clone(reqs), ds
	s.mu.Unlock()
	return ds, err
}

func (s *seenLimiter) last() ([]runtime.Request, runtime.Decisions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs, s.ds
}

// keysInGroupOrder returns n keys in the order a cluster decides their
// groups: by hash tag.
func keysInGroupOrder(n int) []string {
	var keys []string
	for i := 0; len(keys) < 3*n; i++ {
		keys = append(keys, fmt.Sprintf("user-%d", i))
	}
	slices.SortFunc(keys, func(a, b string) int {
		ta, tb := string(appendTag(nil, a)), string(appendTag(nil, b))
		if ta < tb {
			return -1
		}
		if ta > tb {
			return 1
		}
		return 0
	})
	return []string{keys[0], keys[len(keys)/2], keys[len(keys)-1]}[:n]
}

// testModes runs modeCases on client, through Decide and through
// runtime.Enforce, each on its own prefix, and requires the model's
// Decisions both ways, the same RetryAfter and ResetAfter both ways, and
// no storage key for a limit that is off.
func testModes(t *testing.T, client redis.UniversalClient) {
	keys := keysInGroupOrder(3)
	for ci, c := range modeCases {
		t.Run(c.name, func(t *testing.T) {
			clock := newFakeClock()
			opts := []Option{WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10 * time.Second),
				WithDenyCache(0), WithInstances(1)}
			direct := New(client, append(opts, WithPrefix(fmt.Sprintf("modes%d-d:", ci)))...)
			seen := &seenLimiter{Limiter: New(client, append(opts, WithPrefix(fmt.Sprintf("modes%d-e:", ci)))...)}
			m := &modeModel{limits: c.limits, used: make([]int64, len(c.limits))}
			for n, call := range append(slices.Clone(c.calls), c.probes()...) {
				probe := n >= len(c.calls)
				reqs := c.requests(call, keys, probe)
				if probe {
					m.limits = slices.Clone(c.limits)
					m.limits[call[0].limit].mode = S
				}
				want := m.decide(call)
				m.limits = c.limits
				ds, err := direct.Decide(ctx, reqs...)
				require.NoError(t, err, "call %d", n)
				requireModeDecisions(t, want, ds, "call %d through Decide", n)

				err = runtime.Enforce(ctx, seen, reqs...)
				got, eds := seen.last()
				require.Equal(t, reqs, got, "call %d: Enforce passes the requests as they are", n)
				requireModeDecisions(t, want, eds, "call %d through Enforce", n)
				require.Equal(t, ds, eds, "call %d: Decide and Enforce decide alike", n)
				if want.Allowed {
					require.NoError(t, err, "call %d", n)
					continue
				}
				var le *runtime.LimitError
				require.ErrorAs(t, err, &le, "call %d", n)
				i := slices.IndexFunc(reqs, func(r runtime.Request) bool { return r.Limit == le.Limit })
				require.GreaterOrEqual(t, i, 0, "call %d: the denial names one of the call's limits", n)
				require.Equal(t, E, le.Limit.Mode, "call %d: only an enforced limit denies", n)
				require.Equal(t, ds.Each[i], le.Decision, "call %d", n)
			}
			for _, l := range c.limits {
				if l.mode != O {
					continue
				}
				lim := runtime.Limit{Name: "modes." + l.name, Window: time.Minute, Max: l.max, Algorithm: l.algo}
				for _, r := range []*Limiter{direct, seen.Limiter.(*Limiter)} {
					n, err := client.Exists(ctx, r.storageKey(lim, keys[l.key])).Result()
					require.NoError(t, err)
					require.Zero(t, n, "limit %s is off, yet Redis holds its key", l.name)
				}
			}
		})
	}
}

// requireModeDecisions requires got to be want, with RetryAfter positive
// exactly for a limit without room and both waits zero for an off limit.
func requireModeDecisions(t *testing.T, want, got runtime.Decisions, msg string, args ...any) {
	t.Helper()
	msg = fmt.Sprintf(msg, args...)
	require.Equal(t, runtime.SourceStore, got.Source, msg)
	require.Len(t, got.Each, len(want.Each), msg)
	trimmed := got
	trimmed.Each = slices.Clone(got.Each)
	for i, d := range got.Each {
		require.Equal(t, !d.Allowed, d.RetryAfter > 0, "%s: limit %d: %+v", msg, i, d)
		trimmed.Each[i].RetryAfter, trimmed.Each[i].ResetAfter = 0, 0
	}
	require.Equal(t, want, trimmed, msg)
}

// TestModes decides every mix of modes on one Redis; testClusterModes does
// on a cluster.
func TestModes(t *testing.T) {
	srv := redistest.StartServer(t)
	testModes(t, srv.Client(t))
}

func testClusterModes(t *testing.T, client *redis.ClusterClient) {
	testModes(t, client)
}

// TestModesOneScriptCall: a decision costs one script call whatever its
// modes, through Decide and through runtime.Enforce, with and without the
// deny cache, a shadow limit out of room included; a call of off limits
// only costs none.
func TestModesOneScriptCall(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, cache := range []int{0, 1 << 20} {
		t.Run(fmt.Sprintf("deny cache %d", cache), func(t *testing.T) {
			clock := newFakeClock()
			lim, cnt := countedLimiter(t, srv, WithClock(clock.Now), WithFailurePolicy(FailClosed),
				WithTimeout(10*time.Second), WithDenyCache(cache), WithPrefix(fmt.Sprintf("calls%d:", cache)))
			shadow := runtime.Request{Limit: runtime.Limit{Name: "calls.shadow", Window: time.Minute, Max: 1, Mode: S}, Key: "k"}
			enforced := runtime.Request{Limit: runtime.Limit{Name: "calls.enforced", Window: time.Minute, Max: 100}, Key: "k"}
			off := runtime.Request{Limit: runtime.Limit{Name: "calls.off", Window: time.Minute, Max: 1, Mode: O}, Key: "k"}
			ask := func(want int64, reqs ...runtime.Request) {
				t.Helper()
				for _, enforce := range []bool{false, true} {
					before := cnt.calls(t)
					if enforce {
						require.NoError(t, runtime.Enforce(ctx, lim, reqs...))
					} else {
						ds, err := lim.Decide(ctx, reqs...)
						require.NoError(t, err)
						require.True(t, ds.Allowed)
					}
					require.Equal(t, want, cnt.calls(t)-before, "script calls; through Enforce: %v", enforce)
				}
			}
			// Loads the script, which a NOSCRIPT reply and an EVAL do first.
			_, err := lim.Decide(ctx, runtime.Request{Limit: enforced.Limit, Key: "warm-up"})
			require.NoError(t, err)
			ask(1, enforced)
			ask(1, shadow)           // the first has room, the second not
			ask(1, shadow, enforced) // out of room
			ask(1, enforced, shadow, off)
			ask(1, shadow, off)
			ask(0, off)
			ds, err := lim.Decide(ctx, shadow, enforced)
			require.NoError(t, err)
			require.Equal(t, []bool{false, true}, []bool{ds.Each[0].Allowed, ds.Each[1].Allowed})
			require.Equal(t, 100-7, ds.Each[1].Remaining, "the enforced limit recorded every call")
		})
	}
}

// TestDenyCacheModes: a cached denial of a shadow limit never denies, and
// one learnt while the limit was in shadow mode denies it once it is
// enforced, as Redis would; a cached denial of an enforced limit denies
// the call with its shadow limits, from memory.
func TestDenyCacheModes(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim, cnt := countedLimiter(t, srv, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	shadowL := runtime.Limit{Name: "dcm.shadow", Window: time.Minute, Max: 1, Mode: S}
	shadow := runtime.Request{Limit: shadowL, Key: "k"}
	enforced := runtime.Request{Limit: runtime.Limit{Name: "dcm.enforced", Window: time.Minute, Max: 3}, Key: "k"}
	off := runtime.Request{Limit: runtime.Limit{Name: "dcm.off", Window: time.Minute, Max: 1, Mode: O}, Key: "k"}

	ds, asked := askCounted(t, lim, cnt, shadow, enforced)
	require.True(t, asked)
	require.True(t, ds.Allowed)
	// The shadow limit is out of room in an admitted call: its denial is
	// remembered, yet the call goes to Redis, once, and is admitted.
	ds, asked = askCounted(t, lim, cnt, shadow, enforced)
	require.True(t, asked)
	require.True(t, ds.Allowed)
	require.False(t, ds.Each[0].Allowed)
	require.Equal(t, 1, lim.deny.len())
	ds, asked = askCounted(t, lim, cnt, shadow, off)
	require.True(t, asked, "a call with no enforced limit is never denied from memory")
	require.True(t, ds.Allowed)
	require.False(t, ds.Each[0].Allowed)

	// The same limit, enforced: the denial learnt in shadow mode holds.
	enforcedNow := shadow
	enforcedNow.Limit.Mode = E
	ds, asked = askCounted(t, lim, cnt, enforcedNow)
	require.False(t, asked)
	require.False(t, ds.Allowed)
	fresh := New(srv.Client(t), WithClock(clock.Now), WithFailurePolicy(FailClosed), WithDenyCache(0), WithInstances(1))
	truth, err := fresh.Decide(ctx, enforcedNow)
	require.NoError(t, err)
	require.False(t, truth.Allowed, "Redis denies it too")
	require.Equal(t, truth.Each[0].RetryAfter, ds.Each[0].RetryAfter)

	// The enforced limit runs out (its third call), and then its cached
	// denial denies the call with the shadow one, and with an off one.
	ds, asked = askCounted(t, lim, cnt, enforced)
	require.True(t, asked)
	require.True(t, ds.Allowed)
	ds, asked = askCounted(t, lim, cnt, shadow, enforced)
	require.True(t, asked)
	require.False(t, ds.Allowed)
	ds, asked = askCounted(t, lim, cnt, shadow, enforced, off)
	require.False(t, asked)
	require.False(t, ds.Allowed)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 1}, ds.Each[2])
	require.True(t, errors.Is(runtime.Enforce(ctx, lim, off, enforced), runtime.ErrLimited))

	// Once the window passes, both have room again.
	clock.Advance(time.Minute + time.Second)
	ds, asked = askCounted(t, lim, cnt, shadow, enforced)
	require.True(t, asked)
	require.True(t, ds.Allowed)
	require.True(t, ds.Each[0].Allowed)
}

// TestFallbackShareModes: under FailLocal, the fallback applies modes to
// the shares, a share too small for a shadow limit's cost does not deny
// the call, an off limit is ignored whatever its share, and an enforced
// limit's too small share denies; FailOpen admits, FailClosed errs.
func TestFallbackShareModes(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithInstances(4), WithTimeout(time.Second))
	srv.Stop(t)
	shadow := runtime.Request{Limit: runtime.Limit{Name: "fs.shadow", Window: time.Minute, Max: 4, Mode: S}, Key: "k", Cost: 2}
	enforced := runtime.Request{Limit: runtime.Limit{Name: "fs.enforced", Window: time.Minute, Max: 8}, Key: "k", Cost: 2}
	off := runtime.Request{Limit: runtime.Limit{Name: "fs.off", Window: time.Minute, Max: 4, Mode: O}, Key: "k", Cost: 3}

	ds, err := lim.Decide(ctx, shadow, enforced, off)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceFallback, ds.Source)
	require.True(t, ds.Allowed)
	require.False(t, ds.Each[0].Allowed, "a share of 1 has no room for 2")
	require.True(t, ds.Each[1].Allowed)
	require.Zero(t, ds.Each[1].Remaining, "the enforced limit's share of 2, used up")
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4}, ds.Each[2])

	ds, err = lim.Decide(ctx, shadow, off)
	require.NoError(t, err)
	require.True(t, ds.Allowed, "nothing left to ask")

	tooBig := enforced
	tooBig.Limit.Max = 4
	ds, err = lim.Decide(ctx, tooBig, off)
	require.NoError(t, err)
	require.False(t, ds.Allowed)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4}, ds.Each[1])

	// A share of 2 in shadow mode: the third call finds no room, and is
	// admitted under the enforced limit, which records it.
	room := runtime.Request{Limit: runtime.Limit{Name: "fs.room", Window: time.Minute, Max: 8, Mode: S}, Key: "k"}
	wide := runtime.Request{Limit: runtime.Limit{Name: "fs.wide", Window: time.Minute, Max: 40}, Key: "k"}
	for n := range 3 {
		ds, err = lim.Decide(ctx, room, wide, off)
		require.NoError(t, err)
		require.Equal(t, runtime.SourceFallback, ds.Source)
		require.True(t, ds.Allowed, "call %d", n)
		require.Equal(t, n < 2, ds.Each[0].Allowed, "call %d", n)
		require.Equal(t, 10-1-n, ds.Each[1].Remaining, "call %d", n)
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4}, ds.Each[2], "call %d", n)
	}

	open := New(srv.Client(t), WithInstances(4), WithTimeout(time.Second), WithFailurePolicy(FailOpen))
	ds, err = open.Decide(ctx, tooBig, shadow, off)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceFailOpen, ds.Source)
	require.True(t, ds.Allowed)
	require.Equal(t, runtime.Decision{Allowed: true, Remaining: 4}, ds.Each[2])
	closed := New(srv.Client(t), WithInstances(4), WithTimeout(time.Second), WithFailurePolicy(FailClosed))
	_, err = closed.Decide(ctx, shadow, off)
	require.ErrorIs(t, err, runtime.ErrUnavailable)
	ds, err = closed.Decide(ctx, off)
	require.NoError(t, err, "a call of off limits does not need Redis")
	require.True(t, ds.Allowed)
}
