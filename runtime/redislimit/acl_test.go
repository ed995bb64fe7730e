package redislimit

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// docsACL returns the rules of the ACL line that docs/redis.md gives to
// paste, after "ACL SETUSER ratelimit", so that the tests run what the
// documentation says.
func docsACL(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/redis.md")
	require.NoError(t, err)
	for line := range strings.Lines(string(doc)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ACL SETUSER ratelimit "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatal("docs/redis.md gives no line beginning with ACL SETUSER ratelimit")
	return nil
}

// aclRun is a limiter whose events and log a test reads.
type aclRun struct {
	lim    *Limiter
	events *degradedLog
	logs   *syncBuffer
}

func newACLRun(t *testing.T, client redis.UniversalClient, opts ...Option) aclRun {
	t.Helper()
	run := aclRun{events: &degradedLog{}, logs: &syncBuffer{}}
	opts = append([]Option{WithOnDegraded(run.events.record), WithRetryInterval(time.Hour),
		WithLogger(slog.New(slog.NewTextHandler(run.logs, nil)))}, opts...)
	run.lim = New(client, opts...)
	return run
}

// errorLines returns the lines logged at Error.
func (a aclRun) errorLines() []string {
	var out []string
	for line := range strings.Lines(a.logs.String()) {
		if strings.Contains(line, "level=ERROR") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// aclLimits are the limits the ACL tests decide: one per algorithm.
func aclLimits(name string) []runtime.Limit {
	var ls []runtime.Limit
	for _, a := range []runtime.Algorithm{runtime.SlidingLog, runtime.SlidingWindow, runtime.FixedWindow, runtime.TokenBucket, runtime.GCRA} {
		ls = append(ls, runtime.Limit{Name: name + "." + string(a), Algorithm: a, Window: time.Minute, Max: 3})
	}
	return ls
}

// decideAll runs the whole limiter: each algorithm's limit to its Max and
// one more call, then a call of all of them together, and returns the
// decisions' sources.
func decideAll(t *testing.T, lim *Limiter, ls []runtime.Limit, key string) []runtime.Source {
	t.Helper()
	bg := context.Background()
	var sources []runtime.Source
	for _, l := range ls {
		for range l.Max + 1 {
			ds, err := lim.Decide(bg, runtime.Request{Limit: l, Key: key})
			require.NoError(t, err)
			sources = append(sources, ds.Source)
		}
	}
	reqs := make([]runtime.Request, len(ls))
	for i, l := range ls {
		reqs[i] = runtime.Request{Limit: l, Key: key + "-all"}
	}
	ds, err := lim.Decide(bg, reqs...)
	require.NoError(t, err)
	return append(sources, ds.Source)
}

// TestMinimalACL runs the whole limiter as a user with exactly the ACL
// that docs/redis.md gives: Redis decides every call, exactly, Check finds
// nothing to report, and nothing is logged.
func TestMinimalACL(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.SetUser(t, "ratelimit", docsACL(t)...)
	run := newACLRun(t, srv.ClientAs(t, "ratelimit", "secret"))
	bg := context.Background()

	rep, err := run.lim.Check(bg)
	require.NoError(t, err)
	require.NoError(t, rep.Eviction)
	require.Equal(t, map[string]string{srv.Addr(): srv.Version(t)}, rep.Versions)

	ls := aclLimits("acl.minimal")
	for _, l := range ls {
		for i := range l.Max + 1 {
			ds, err := run.lim.Decide(bg, runtime.Request{Limit: l, Key: "k"})
			require.NoError(t, err)
			require.Equal(t, runtime.SourceStore, ds.Source, "%s call %d", l.Name, i+1)
			require.Equal(t, i < l.Max, ds.Allowed, "%s call %d: exactly Max admitted", l.Name, i+1)
		}
	}
	reqs := make([]runtime.Request, len(ls))
	for i, l := range ls {
		reqs[i] = runtime.Request{Limit: l, Key: "all", Cost: 2}
	}
	ds, err := run.lim.Decide(bg, reqs...)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceStore, ds.Source)
	require.True(t, ds.Allowed)
	for i, d := range ds.Each {
		require.Equal(t, 1, d.Remaining, "%s", ls[i].Name)
	}

	// A concurrency limit: a permit acquired, a call waiting in line,
	// a renewal and the releases.
	cl := runtime.Limit{Name: "acl.minimal.concurrency", Algorithm: runtime.Concurrency, Window: time.Minute, Max: 1}
	creq := runtime.Request{Limit: cl, Key: "k"}
	ds, h, err := run.lim.Hold(bg, creq)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceStore, ds.Source)
	require.True(t, ds.Allowed)
	ds, _, err = run.lim.HoldWait(bg, 20*time.Millisecond, creq)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceStore, ds.Source)
	require.False(t, ds.Allowed, "one permit")
	require.NoError(t, h.(runtime.PermitHold).Renew(bg))
	require.NoError(t, h.Settle(bg, 1))
	ds, h, err = run.lim.HoldWait(bg, time.Minute, creq)
	require.NoError(t, err)
	require.True(t, ds.Allowed, "the permit was released")
	require.NoError(t, h.Settle(bg, 1))

	run.lim.peers.next.Store(0)
	run.lim.peers.due(run.lim.client, time.Now())
	require.Eventually(t, func() bool { n, _ := run.lim.peers.count(); return n == 1 }, recoveryBound, time.Millisecond,
		"the instance beat runs as this user")
	require.Empty(t, run.events.since(0), "Redis decided everything")
	require.Empty(t, run.logs.String(), "nothing to report")
}

// TestACLEachPermissionRemoved runs the limiter and Check as the user of
// docs/redis.md's ACL with each of its permissions removed in turn. Each
// removal is named by Check's error and by the log at Error; every
// decision that Redis did not make carries ErrPermission; and a removal
// that stops the decisions opens the breaker instead of paying a round
// trip per call.
func TestACLEachPermissionRemoved(t *testing.T) {
	srv := redistest.StartServer(t)
	rules := docsACL(t)
	bg := context.Background()
	for i, rule := range rules {
		if rule == "on" || strings.HasPrefix(rule, ">") {
			continue
		}
		t.Run(rule, func(t *testing.T) {
			without := slices.Delete(slices.Clone(rules), i, i+1)
			srv.SetUser(t, "ratelimit", without...)
			run := newACLRun(t, srv.ClientAs(t, "ratelimit", "secret"))
			// The scripts are loaded on the server whatever the user,
			// so that EVALSHA never falls back on EVAL by chance.
			require.NoError(t, srv.Client(t).ScriptFlush(bg).Err())

			// name is how messages name what is missing.
			name := strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(rule, "+"), "|", " "))
			if strings.HasPrefix(rule, "~") {
				name = rule
			}
			sources := decideAll(t, run.lim, aclLimits("acl.without"), rule)
			rep, err := run.lim.Check(bg)
			t.Logf("Check: %v", err)

			if rule == "+config|get" {
				// Optional: decisions and Check work; the policy is
				// reported as unknown.
				require.NoError(t, err)
				require.ErrorIs(t, rep.Eviction, ErrEvictionRisk)
				require.Contains(t, rep.Eviction.Error(), "cannot read maxmemory-policy")
				require.Empty(t, run.errorLines())
				for _, s := range sources {
					require.Equal(t, runtime.SourceStore, s)
				}
				return
			}
			if rule == "+wait" || rule == "+info" {
				// Durable decisions' alone (TestDurableMinimalACL): a
				// limiter without them needs neither.
				require.NoError(t, err)
				require.Empty(t, run.errorLines())
				for _, s := range sources {
					require.Equal(t, runtime.SourceStore, s)
				}
				return
			}
			require.ErrorIs(t, err, ErrPermission)
			require.Contains(t, err.Error(), name, "Check names what is missing")
			if !strings.HasPrefix(rule, "~") {
				require.Contains(t, err.Error(), "add "+rule+" to the user's ACL", "Check says what to do")
			}
			lines := run.errorLines()
			require.NotEmpty(t, lines, "logged at Error")
			require.True(t, slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, name) }),
				"the log names %s:\n%s", name, strings.Join(lines, "\n"))
			seen := map[string]bool{}
			for _, l := range lines {
				cause := regexp.MustCompile(`missing="[^"]*"`).FindString(l)
				require.False(t, seen[cause], "each cause is logged once:\n%s", strings.Join(lines, "\n"))
				seen[cause] = true
			}

			evs := run.events.since(0)
			for _, ev := range evs {
				require.ErrorIs(t, ev.Err, ErrPermission, "every degraded decision says why")
			}
			degraded := slices.Index(sources, runtime.SourceFallback)
			t.Logf("%d of %d decisions degraded; logged:\n%s", len(evs), len(sources), strings.Join(lines, "\n"))
			if degraded >= 0 {
				// The refusal opened the breaker: the decisions after it
				// did not ask Redis.
				for _, ev := range evs[1:] {
					require.ErrorIs(t, ev.Err, ErrCircuitOpen)
				}
				require.Equal(t, len(sources)-degraded, len(evs))
			}
		})
	}
}

// TestRestrictedUserWithoutTIME is the user of issue 32, with the command
// groups the scripts seem to need but not TIME: before, every decision
// went to the fallback for a per-key script error, paying a round trip,
// and nothing was logged. Now the first refusal opens the breaker, the log
// names TIME once, and every degraded decision and observed event carries
// ErrPermission.
func TestRestrictedUserWithoutTIME(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.SetUser(t, "app", "on", ">app-pass", "~*", "+evalsha", "+eval", "+@sortedset", "+@hash", "+@string", "+pexpire", "+pttl")
	run := newACLRun(t, srv.ClientAs(t, "app", "app-pass"), WithInstances(1))
	obs := &eventLog{}
	lim := runtime.Operate(run.lim, runtime.WithObserver(obs))
	l := runtime.Limit{Name: "acl.before", Window: time.Minute, Max: 3}
	bg := context.Background()
	for i := range 5 {
		ds, err := lim.Decide(bg, runtime.Request{Limit: l, Key: "user@example.com"})
		require.NoError(t, err)
		require.Equal(t, runtime.SourceFallback, ds.Source, "call %d", i+1)
		require.ErrorIs(t, ds.Cause, ErrPermission)
		require.Equal(t, i < 3, ds.Allowed, "the fallback keeps the limit")
	}
	// CONFIG GET is refused too, which the configuration check reports
	// apart.
	evs := slices.DeleteFunc(run.events.since(0), func(ev DegradedEvent) bool { return errors.Is(ev.Err, ErrEvictionRisk) })
	require.Len(t, evs, 5)
	require.NotErrorIs(t, evs[0].Err, ErrCircuitOpen, "the first call asked Redis")
	for i, ev := range evs {
		require.ErrorIs(t, ev.Err, ErrPermission, "event %d", i+1)
		require.Contains(t, ev.Err.Error(), "TIME")
		require.NotContains(t, ev.Err.Error(), "user@example.com", "no key in an error")
		if i > 0 {
			require.ErrorIs(t, ev.Err, ErrCircuitOpen, "event %d: the refusal opened the breaker", i+1)
		}
	}
	obs.mu.Lock()
	observed := slices.Clone(obs.events)
	obs.mu.Unlock()
	require.Len(t, observed, 5)
	for _, ev := range observed {
		require.ErrorIs(t, ev.Err, ErrPermission, "the observers see the refusal")
	}
	lines := run.errorLines()
	require.Len(t, lines, 1, "logged once:\n%s", run.logs.String())
	t.Logf("logged: %s", lines[0])
	require.Contains(t, lines[0], `missing="command TIME"`)
	require.Contains(t, lines[0], "add +time to the user's ACL")
	require.Contains(t, lines[0], "limit=acl.before")

	// Once the user may run TIME, the breaker's probe finds Redis
	// deciding again.
	again := newACLRun(t, srv.ClientAs(t, "app", "app-pass"), WithInstances(1), WithRetryInterval(time.Millisecond))
	ds, err := again.lim.Decide(bg, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.Equal(t, runtime.SourceFallback, ds.Source)
	srv.SetUser(t, "app", "on", ">app-pass", "~*", "+evalsha", "+eval", "+@sortedset", "+@hash", "+@string", "+pexpire", "+pttl", "+time")
	require.Eventually(t, func() bool {
		ds, err := again.lim.Decide(bg, runtime.Request{Limit: l, Key: "k"})
		return err == nil && ds.Source == runtime.SourceStore
	}, recoveryBound, time.Millisecond)
	require.NotErrorIs(t, again.lim.breaker.openErr(), ErrPermission, "the breaker forgets the refusal once Redis decides")
}

// TestRefusalLogSpacing: a cause is logged at once, then at most once per
// refusalLogEvery, each cause apart from the others.
func TestRefusalLogSpacing(t *testing.T) {
	var l refusalLog
	const s = int64(time.Second)
	require.True(t, l.due("command TIME", 5*s))
	require.False(t, l.due("command TIME", 5*s))
	require.True(t, l.due("command ZADD", 6*s), "another cause is logged at once")
	require.False(t, l.due("command TIME", 5*s+int64(refusalLogEvery)-1))
	require.True(t, l.due("command TIME", 5*s+int64(refusalLogEvery)))
	require.False(t, l.due("command ZADD", 7*s))
}

// TestRenamedEVALSHA runs the limiter against a server whose EVALSHA is
// renamed away: the decisions follow the policy, the breaker opens, and
// Check and the log say that Redis does not know EVALSHA.
func TestRenamedEVALSHA(t *testing.T) {
	for _, to := range []string{"", "EVALSHA_7f3a"} {
		t.Run("to "+strings.Trim(to+"-", "-"), func(t *testing.T) {
			srv := redistest.StartServer(t, redistest.WithArgs("--rename-command", "EVALSHA", to))
			run := newACLRun(t, srv.Client(t), WithInstances(1))
			l := runtime.Limit{Name: "acl.renamed", Window: time.Minute, Max: 3}
			bg := context.Background()
			for i := range 3 {
				ds, err := run.lim.Decide(bg, runtime.Request{Limit: l, Key: "k"})
				require.NoError(t, err)
				require.Equal(t, runtime.SourceFallback, ds.Source, "call %d", i+1)
			}
			evs := run.events.since(0)
			require.Len(t, evs, 3)
			for i, ev := range evs {
				require.ErrorIs(t, ev.Err, ErrPermission)
				require.Contains(t, ev.Err.Error(), "does not know the command EVALSHA")
				require.Equal(t, i > 0, errors.Is(ev.Err, ErrCircuitOpen), "event %d", i+1)
			}
			_, err := run.lim.Check(bg)
			t.Logf("Check: %v", err)
			require.ErrorIs(t, err, ErrPermission)
			require.Contains(t, err.Error(), "does not know the command EVALSHA")
			require.NotContains(t, err.Error(), "check-0", "no key in an error")
			lines := run.errorLines()
			require.Len(t, lines, 1, "logged once:\n%s", run.logs.String())
			require.Contains(t, lines[0], `missing="command EVALSHA"`)
		})
	}
}

// TestProbeCoversTheScripts checks that Check's probe calls every command
// that the limiter's scripts and its instance beat call, each with a valid
// number of arguments: as a user that may run everything, the probe
// reports no error at all.
func TestProbeCoversTheScripts(t *testing.T) {
	called := map[string]bool{}
	for _, src := range []string{mixedScript.src.(string), instanceSrc} {
		for _, m := range regexp.MustCompile(`call\('([A-Za-z]+)'`).FindAllStringSubmatch(src, -1) {
			called[strings.ToUpper(m[1])] = true
		}
	}
	require.NotEmpty(t, called)
	probed := map[string]bool{"PTTL": true}
	for _, c := range probeCalls {
		probed[c[0]] = true
	}
	for c := range called {
		require.True(t, probed[c], "the scripts call %s, which the probe does not", c)
	}
	srv := redistest.StartServer(t)
	res, err := srv.Client(t).Eval(context.Background(), probeScript, []string{"{p}z", "{p}h", "{p}s"}).StringSlice()
	require.NoError(t, err)
	require.Empty(t, res, "every call of the probe is valid")
}

// TestRefusalsAreClassified classifies the refusals of Redis 6, 7.0, 7.2
// and later (8 among them) and Valkey 8, each message as the server writes
// it: each trips the breaker, matches ErrPermission and names what is
// missing, and none quotes a key. Redis 7.2 (redis/redis#11160) and Valkey
// write a refusal inside a script as "ACL failure in script: " and the
// NOPERM reply's text.
func TestRefusalsAreClassified(t *testing.T) {
	for msg, missing := range map[string]string{
		// Redis 7.2+, 8 and Valkey 8: inside a script, then outside.
		"ERR ACL failure in script: User app has no permissions to run the 'time' command script: 0123456789012345678901234567890123456789, on @user_script:774.":   "command TIME",
		"ERR ACL failure in script: User app has no permissions to run the 'pexpire' command script: 0123456789012345678901234567890123456789, on @user_script:12.": "command PEXPIRE",
		"ERR ACL failure in script: No permissions to access a key script: 0123456789012345678901234567890123456789, on @user_script:40.":                           "key pattern ~ratelimit:*",
		"NOPERM User app has no permissions to run the 'evalsha' command":                                                                                           "command EVALSHA",
		"NOPERM User app has no permissions to run the 'cluster|slots' command":                                                                                     "command CLUSTER SLOTS",
		"ERR Unknown command called from script script: 0123456789012345678901234567890123456789, on @user_script:9.":                                               "command unnamed",
		"NOPERM this user has no permissions to run the 'evalsha' command":                                                                                          "command EVALSHA",
		"NOPERM User app has no permissions to run the 'time' command":                                                                                              "command TIME",
		"NOPERM this user has no permissions to access one of the keys used as arguments":                                                                           "key pattern ~ratelimit:*",
		"NOPERM No permissions to access a key":                                                                                                                     "key pattern ~ratelimit:*",
		"ERR unknown command 'EVALSHA', with args beginning with: 'abc' '1' 'ratelimit:{x}secret@x'":                                                                "command EVALSHA",
		"ERR unknown command `EVAL`, with args beginning with: `x`":                                                                                                 "command EVAL",
		"NOAUTH Authentication required.":                               "credentials",
		"WRONGPASS invalid username-password pair or user is disabled.": "credentials",
		"ERR The user executing the script can't run this command or subcommand script: 0123456789012345678901234567890123456789, on @user_script:1.":                                        "command unnamed",
		"ERR Error running script (call to f_0123456789012345678901234567890123456789): @user_script:1: @user_script: 1: The user executing the script can't run this command or subcommand": "command unnamed",
		"ERR Unknown Redis command called from script script: 0123456789012345678901234567890123456789, on @user_script:9.":                                                                  "command unnamed",
	} {
		err := redisErr(msg)
		require.True(t, tripsBreaker(err), "%q", msg)
		ref := refusalOf(err, "ratelimit:")
		require.NotNil(t, ref, "%q", msg)
		require.ErrorIs(t, ref, ErrPermission)
		require.Equal(t, missing, ref.missing, "%q", msg)
		require.NotContains(t, ref.Error(), "secret@x")
		var rerr redis.Error
		require.ErrorAs(t, ref, &rerr, "Redis's reply stays reachable")
		require.NotContains(t, rerr.Error(), "secret@x")
	}
	// A refusal inside one of the limiter's scripts is traced to the
	// command on its line.
	src := mixedScript.src.(string)
	line := slices.IndexFunc(strings.Split(src, "\n"), func(l string) bool { return strings.Contains(l, "call('TIME')") }) + 1
	msg := "ERR The user executing the script can't run this command or subcommand script: " + mixedScript.Hash() + ", on @user_script:" + strconv.Itoa(line) + "."
	require.Equal(t, "command TIME", refusalOf(redisErr(msg), "ratelimit:").missing)
	require.Nil(t, refusalOf(redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), "ratelimit:"))
	require.Nil(t, refusalOf(redisErr("ERR ratelimit: bad argument script: "+mixedScript.Hash()+", on @user_script:3."), "ratelimit:"))
	require.Nil(t, refusalOf(redisErr("OOM command not allowed when used memory > 'maxmemory'. script: "+mixedScript.Hash()+", on @user_script:3."), "ratelimit:"))

	// Check's probe reads what each call inside its script got, pcall's
	// error, the same way, with the command it called.
	for reply, missing := range map[string]string{
		"ACL failure in script: User app has no permissions to run the 'time' command":        "command TIME", // Redis 7.2+, Valkey
		"The user executing the script can't run this command or subcommand":                  "command ZADD", // Redis 7.0
		"@user_script: 1: The user executing the script can't run this command or subcommand": "command ZADD", // Redis 6
		"Unknown Redis command called from script":                                            "command ZADD", // Redis, renamed
		"Unknown command called from script":                                                  "command ZADD", // Valkey, renamed
		"ACL failure in script: No permissions to access a key":                               "key pattern ~ratelimit:*",
	} {
		cmd := "ZADD"
		if strings.Contains(reply, "'time'") {
			cmd = "TIME"
		}
		ref := readRefusal(reply, "ratelimit:", cmd, refusedReply(reply))
		require.NotNil(t, ref, "%q", reply)
		require.Equal(t, missing, ref.missing, "%q", reply)
	}
	require.Nil(t, readRefusal("WRONGTYPE Operation against a key holding the wrong kind of value", "ratelimit:", "ZADD", nil))
}

// TestMinimalACLOnACluster runs the limiter and Check on a Redis Cluster
// as the user of docs/redis.md's ACL with its additions for a cluster, set
// on every node: Check runs the scripts on each of the three primaries and
// finds nothing, and Redis decides calls whose limits span several slots.
// Without TIME on one primary, Check names it for that node alone; without
// CLUSTER SLOTS, it names that.
func TestMinimalACLOnACluster(t *testing.T) {
	doc, err := os.ReadFile("../../docs/redis.md")
	require.NoError(t, err)
	m := regexp.MustCompile("On a Redis Cluster, add `([^`]+)`").FindSubmatch(doc)
	require.NotNil(t, m, "docs/redis.md names the cluster's additions")
	rules := append(docsACL(t), strings.Fields(string(m[1]))...)
	cl := redistest.StartCluster(t)
	for _, n := range cl.Nodes() {
		n.SetUser(t, "ratelimit", rules...)
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Username: "ratelimit", Password: "secret"})
	t.Cleanup(func() { _ = client.Close() })
	run := newACLRun(t, client)
	bg := context.Background()

	rep, err := run.lim.Check(bg)
	require.NoError(t, err)
	require.Len(t, rep.Versions, 3, "every primary is asked")
	for addr, v := range rep.Versions {
		require.Equal(t, cl.Nodes()[0].Version(t), v, addr)
	}
	ls := aclLimits("acl.cluster")
	for i := range 4 {
		// Keys of several slots: the call is decided slot by slot.
		reqs := []runtime.Request{{Limit: ls[0], Key: "a"}, {Limit: ls[1], Key: "b", Cost: 1 + int64(i%2)}, {Limit: ls[4], Key: "c"}}
		ds, err := run.lim.Decide(bg, reqs...)
		require.NoError(t, err)
		require.Equal(t, runtime.SourceStore, ds.Source, "call %d", i+1)
	}
	require.Empty(t, run.events.since(0))
	require.Empty(t, run.errorLines(), "nothing to report:\n%s", run.logs.String())

	bare := cl.Masters()[0]
	bare.SetUser(t, "ratelimit", slices.DeleteFunc(slices.Clone(rules), func(r string) bool { return r == "+time" })...)
	_, err = run.lim.Check(bg)
	t.Logf("Check: %v", err)
	require.ErrorIs(t, err, ErrPermission)
	require.Contains(t, err.Error(), bare.Addr()+": ratelimit: redis refuses the limiter's user the command TIME")
	for _, other := range cl.Masters()[1:] {
		require.NotContains(t, err.Error(), other.Addr()+":")
	}

	// Without CLUSTER SLOTS, a new client cannot learn the slot map.
	for _, n := range cl.Nodes() {
		n.SetUser(t, "ratelimit", slices.DeleteFunc(slices.Clone(rules), func(r string) bool { return r == "+cluster|slots" })...)
	}
	fresh := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Username: "ratelimit", Password: "secret"})
	t.Cleanup(func() { _ = fresh.Close() })
	run = newACLRun(t, fresh)
	_, err = run.lim.Check(bg)
	t.Logf("Check: %v", err)
	require.ErrorIs(t, err, ErrPermission)
	require.Contains(t, err.Error(), "the command CLUSTER SLOTS: add +cluster|slots to the user's ACL")
	require.Contains(t, run.logs.String(), `missing="command CLUSTER SLOTS"`)
}
