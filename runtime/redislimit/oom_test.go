package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// With maxmemory and maxmemory-policy noeviction, Redis refuses a script's
// write with an OOM error only at the script's first write, and only if
// that command is flagged deny-oom (ZADD, HSET, HINCRBY and SET are;
// ZREMRANGEBYSCORE, HDEL and PEXPIRE are not). Once a script has written
// anything, its later writes go through. So a script that tidied a key
// before recording an admission would keep filling a Redis that is out of
// memory. These tests fill a real Redis past its maxmemory and require
// every decision that would record something to fail with the OOM error
// instead, writing nothing.

const (
	// oomFill is how much data is written before maxmemory is lowered
	// below what the server uses.
	oomFill = 4 << 20
	// oomSlack bounds how much used_memory may grow while every write is
	// refused: client connections and their buffers, nothing per key.
	oomSlack = 256 << 10
	// oomDecisions is how many decisions each case makes on new keys.
	oomDecisions = 300
	// oomWindow is every limit's window: keys outlive the test by far, in
	// Redis's time as in the fake clock's.
	oomWindow = time.Hour
)

// oomCase is one call shape: a single limit, or several limits on one key
// decided by one script.
type oomCase struct {
	name   string
	limits []runtime.Limit
}

func oomCases() []oomCase {
	var cases []oomCase
	add := func(name string, algos []runtime.Algorithm, max int) {
		c := oomCase{name: name}
		for _, a := range algos {
			c.limits = append(c.limits, runtime.Limit{Name: fmt.Sprintf("oom.%d.%s", len(cases), a), Window: oomWindow, Max: max, Algorithm: a})
		}
		cases = append(cases, c)
	}
	for _, a := range runtime.Algorithms() {
		add(string(a), []runtime.Algorithm{a}, 10)
	}
	// At Max 128 a sliding log's commit orders its writes differently, to
	// keep the key in Redis's compact encoding; see lua/sliding_log.lua.
	add("sliding-log at Max 128", []runtime.Algorithm{runtime.SlidingLog}, 128)
	// One script decides every limit of a call: a write while checking any
	// of them would let every commit through.
	add("sliding-window and sliding-log", []runtime.Algorithm{runtime.SlidingWindow, runtime.SlidingLog}, 10)
	add("every algorithm", runtime.Algorithms(), 10)
	return cases
}

func (c oomCase) requests(key string) []runtime.Request {
	reqs := make([]runtime.Request, len(c.limits))
	for i, l := range c.limits {
		reqs[i] = runtime.Request{Limit: l, Key: key, Cost: 1}
	}
	return reqs
}

// oomTally counts how decisions came out.
type oomTally struct {
	admitted, denied, oom int
	other                 []error
}

func (t oomTally) String() string {
	return fmt.Sprintf("%d admitted, %d denied, %d refused with OOM, %d other errors %v", t.admitted, t.denied, t.oom, len(t.other), t.other)
}

func (t *oomTally) add(ds runtime.Decisions, err error) {
	var rerr redis.Error
	switch {
	case err == nil && ds.Allowed:
		t.admitted++
	case err == nil:
		t.denied++
	case errors.Is(err, runtime.ErrUnavailable) && errors.As(err, &rerr) && strings.Contains(rerr.Error(), "OOM command not allowed"):
		t.oom++
	default:
		if len(t.other) < 3 {
			t.other = append(t.other, err)
		}
	}
}

// oomServer is a Redis that is out of memory, and what it held when it
// ran out.
type oomServer struct {
	admin           *redis.Client
	dbsize, used    int64
	changes         int64
	last            struct{ dbsize, used, changes int64 }
	maxmemory       int64
	usedBeforeLimit int64
}

func infoInt(t *testing.T, c *redis.Client, section, field string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err, "INFO %s %s: %q", section, field, v)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// exhaust fills the server with oomFill bytes, loads every script, and sets
// maxmemory below what the server uses, with maxmemory-policy noeviction.
func exhaust(t *testing.T, admin *redis.Client) *oomServer {
	bg := context.Background()
	val := strings.Repeat("x", 64<<10)
	pipe := admin.Pipeline()
	for i := 0; i < oomFill/len(val); i++ {
		pipe.Set(bg, fmt.Sprintf("fill:%d", i), val, 0)
	}
	_, err := pipe.Exec(bg)
	require.NoError(t, err)
	// Loaded now, so that running them later caches nothing new.
	for _, s := range algoScripts {
		require.NoError(t, s.Load(bg, admin).Err())
	}
	require.NoError(t, mixedScript.Load(bg, admin).Err())

	s := &oomServer{admin: admin, usedBeforeLimit: infoInt(t, admin, "memory", "used_memory")}
	s.maxmemory = s.usedBeforeLimit - oomFill/2 // well below, whatever the buffers do
	require.NoError(t, admin.ConfigSet(bg, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, admin.ConfigSet(bg, "maxmemory", strconv.FormatInt(s.maxmemory, 10)).Err())
	// The server itself must now refuse a plain write.
	err = admin.Set(bg, "oom:probe", "1", 0).Err()
	require.ErrorContains(t, err, "OOM command not allowed", "the server is not out of memory")

	s.dbsize, err = admin.DBSize(bg).Result()
	require.NoError(t, err)
	s.used = infoInt(t, admin, "memory", "used_memory")
	s.changes = infoInt(t, admin, "persistence", "rdb_changes_since_last_save")
	s.last.dbsize, s.last.used, s.last.changes = s.dbsize, s.used, s.changes
	return s
}

// checkUnchanged checks that nothing was written since exhaust: no key
// added, no change counted (the server never saves, so
// rdb_changes_since_last_save counts every write that changed something),
// and used_memory within oomSlack. It logs what
// changed since the previous check, and lets the test go on to the other
// cases when it fails.
func (s *oomServer) checkUnchanged(t *testing.T, what string) {
	t.Helper()
	n, err := s.admin.DBSize(context.Background()).Result()
	require.NoError(t, err)
	used := infoInt(t, s.admin, "memory", "used_memory")
	changes := infoInt(t, s.admin, "persistence", "rdb_changes_since_last_save")
	t.Logf("%s: %+d keys, %+d changes, used_memory %+d B since the previous case; %+d B in all",
		what, n-s.last.dbsize, changes-s.last.changes, used-s.last.used, used-s.used)
	s.last.dbsize, s.last.used, s.last.changes = n, used, changes
	assert.Equal(t, s.dbsize, n, "%s: keys were added to a Redis out of memory", what)
	assert.Equal(t, s.changes, changes, "%s: Redis recorded writes while out of memory", what)
	assert.LessOrEqual(t, used-s.used, int64(oomSlack), "%s: used_memory grew while every write should be refused", what)
}

// TestOOMRecordsNothing checks that a Redis out of memory (maxmemory with
// noeviction) makes every decision that would record an admission fail with
// its OOM error, under FailClosed, rather than record it: on new keys, on
// keys holding admissions (some of them too old to count, which the
// algorithms remove when they record), and for several limits decided by
// one script. A settle of a held call fails with it too, and changes
// nothing. A decision that denies still answers.
func TestOOMRecordsNothing(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	client := srv.Client(t)
	bg := context.Background()
	cases := oomCases()

	// The OOM error opens the breaker for the retry interval; a nanosecond
	// lets the next decision ask Redis again.
	opts := []Option{WithFailurePolicy(FailClosed), WithTimeout(10 * time.Second), WithRetryInterval(time.Nanosecond)}
	serverTime := New(client, opts...)
	clock := newFakeClock()
	callerTime := New(client, append(opts, WithClock(clock.Now))...)

	// Before memory runs out: for each case, a key with room left whose
	// oldest admissions no longer count, and a key that is full.
	const window = oomWindow
	for _, c := range cases {
		_, err := callerTime.Decide(bg, c.requests("old")...)
		require.NoError(t, err)
	}
	clock.Advance(window / 2)
	for _, c := range cases {
		_, err := callerTime.Decide(bg, c.requests("old")...)
		require.NoError(t, err)
	}
	// The first admissions now lie more than a window (and more than a
	// sliding window's 11 buckets) back; the others still count.
	clock.Advance(window*7/10 + time.Millisecond)
	for _, c := range cases {
		for i := 0; i < c.limits[0].Max; i++ {
			ds, err := callerTime.Decide(bg, c.requests("full")...)
			require.NoError(t, err)
			require.True(t, ds.Allowed, "%s: filling", c.name)
		}
		ds, err := callerTime.Decide(bg, c.requests("full")...)
		require.NoError(t, err)
		require.False(t, ds.Allowed, "%s: the key must be full", c.name)
	}
	_, err := serverTime.Allow(bg, runtime.Limit{Name: "oom.warmup", Window: window, Max: 1}, "warmup")
	require.NoError(t, err)
	dumps := func() map[string]string {
		m := map[string]string{}
		for _, c := range cases {
			for _, l := range c.limits {
				k := string(appendStorageKey(nil, defaultPrefix, algoSpecs[algorithmOf(l)].tag, l.Name, "old"))
				v, err := admin.Dump(bg, k).Result()
				require.NoError(t, err, "DUMP %s", k)
				m[k] = v
			}
		}
		return m
	}
	before := dumps()
	// Two held calls per case, to be settled once memory ran out: one
	// giving its units back, one charging more.
	var held [][2]runtime.Hold
	for _, c := range cases {
		var hs [2]runtime.Hold
		for i := range hs {
			ds, h, err := callerTime.Hold(bg, c.requests("held")...)
			require.NoError(t, err)
			require.True(t, ds.Allowed, "%s: a held call", c.name)
			hs[i] = h
		}
		held = append(held, hs)
	}
	heldDumps := func() map[string]string {
		m := map[string]string{}
		for _, c := range cases {
			for _, l := range c.limits {
				k := string(appendStorageKey(nil, defaultPrefix, algoSpecs[algorithmOf(l)].tag, l.Name, "held"))
				v, err := admin.Dump(bg, k).Result()
				require.NoError(t, err, "DUMP %s", k)
				m[k] = v
			}
		}
		return m
	}
	heldBefore := heldDumps()

	s := exhaust(t, admin)
	t.Logf("used_memory %d after the fill, maxmemory set to %d", s.usedBeforeLimit, s.maxmemory)

	t.Run("new keys", func(t *testing.T) {
		for _, c := range cases {
			var tally oomTally
			for i := 0; i < oomDecisions; i++ {
				tally.add(serverTime.Decide(bg, c.requests(fmt.Sprintf("new-%d", i))...))
			}
			t.Logf("%s: %d decisions on new keys: %v", c.name, oomDecisions, tally)
			assert.Equal(t, oomDecisions, tally.oom, "%s: every decision on a new key must fail with the OOM error: %v", c.name, tally)
			s.checkUnchanged(t, c.name)
		}
	})

	t.Run("keys with admissions", func(t *testing.T) {
		const decisions = 50
		for _, c := range cases {
			var tally oomTally
			for i := 0; i < decisions; i++ {
				tally.add(callerTime.Decide(bg, c.requests("old")...))
			}
			t.Logf("%s: %d decisions on a key with admissions: %v", c.name, decisions, tally)
			assert.Equal(t, decisions, tally.oom, "%s: every decision on a key with room must fail with the OOM error: %v", c.name, tally)
			s.checkUnchanged(t, c.name)
		}
		assert.Equal(t, before, dumps(), "keys with admissions changed while Redis was out of memory")
	})

	t.Run("settles", func(t *testing.T) {
		// A settle's first write is its marker's SET NX, which Redis
		// refuses: the call stays settled as it was decided, and the
		// error says why.
		for i, c := range cases {
			for j, used := range []int64{0, 3} {
				u := make([]int64, len(c.limits))
				for k := range u {
					u[k] = used
				}
				var tally oomTally
				tally.add(runtime.Decisions{}, held[i][j].Settle(bg, u...))
				assert.Equal(t, 1, tally.oom, "%s: a settle at %d must fail with the OOM error: %v", c.name, used, tally)
			}
			s.checkUnchanged(t, c.name)
		}
		assert.Equal(t, heldBefore, heldDumps(), "held keys changed while Redis was out of memory")
	})

	t.Run("full keys still deny", func(t *testing.T) {
		for _, c := range cases {
			var tally oomTally
			for i := 0; i < 10; i++ {
				tally.add(callerTime.Decide(bg, c.requests("full")...))
			}
			t.Logf("%s: 10 decisions on a full key: %v", c.name, tally)
			assert.Equal(t, 10, tally.denied, "%s: a denial writes nothing and must still be answered: %v", c.name, tally)
			s.checkUnchanged(t, c.name)
		}
	})
}

// TestSlidingLogStaysCompact checks that a log filled, then renewed one
// call's worth at a time as its oldest entries stop counting, never holds
// more than Max entries nor takes more than its header and Max slots.
func TestSlidingLogStaysCompact(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	bg := context.Background()
	for _, tc := range []struct{ max, cost int }{{128, 1}, {127, 2}, {100, 40}, {64, 64}} {
		t.Run(fmt.Sprintf("Max %d cost %d", tc.max, tc.cost), func(t *testing.T) {
			clock := newFakeClock()
			lim := New(client, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
			l := runtime.Limit{Name: fmt.Sprintf("compact.%d.%d", tc.max, tc.cost), Window: time.Hour, Max: tc.max}
			skey := string(appendStorageKey(nil, defaultPrefix, algoSpecs[runtime.SlidingLog].tag, l.Name, "k"))
			// Fill the log, then let its oldest entries stop counting, one
			// call's worth at a time, and record a call each time.
			for i := 0; i < tc.max; i++ {
				d, err := lim.Allow(bg, l, "k")
				require.NoError(t, err)
				require.True(t, d.Allowed)
				clock.Advance(l.Window / time.Duration(2*tc.max))
			}
			clock.Advance(l.Window / 2)
			admitted := 0
			for i := 0; i < 3*tc.max/tc.cost; i++ {
				ds, err := lim.Decide(bg, runtime.Request{Limit: l, Key: "k", Cost: int64(tc.cost)})
				require.NoError(t, err)
				if ds.Allowed {
					admitted++
				}
				v, err := client.Get(bg, skey).Result()
				require.NoError(t, err)
				require.LessOrEqual(t, len(logEntries(t, v)), tc.max, "call %d", i+1)
				require.LessOrEqual(t, len(v), len(smallLogMark)+logEntryBytes*tc.max, "call %d", i+1)
				clock.Advance(l.Window / time.Duration(2*tc.max) * time.Duration(tc.cost))
			}
			require.NotZero(t, admitted, "the log renewed its entries")
		})
	}
}
