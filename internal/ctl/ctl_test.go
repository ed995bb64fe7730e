package ctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

var (
	sendCode  = runtime.Limit{Name: "example.com/notify.Notifier.SendCode", Window: time.Minute, Max: 3, Algorithm: runtime.SlidingLog}
	sendBatch = runtime.Limit{Name: "example.com/notify.Notifier.SendBatch", Window: time.Hour, Max: 100, Algorithm: runtime.TokenBucket, Burst: 10, Mode: runtime.ModeShadow}
	render    = runtime.Limit{Name: "Jobs.Render.inflight", Window: 30 * time.Second, Max: 2, Algorithm: runtime.Concurrency}
)

const (
	alice  = "alice@example.com"
	secret = "0123456789abcdef0123456789abcdef-service-secret"
)

// files returns the path of the manifest, testdata/limits.json (as
// `ratelimitgen -list -json` prints it), and writes the overrides file
// when it is not "".
func files(t *testing.T, overrides string) (manifest, over string) {
	t.Helper()
	manifest, err := filepath.Abs(filepath.Join("testdata", "limits.json"))
	require.NoError(t, err)
	if overrides != "" {
		over = filepath.Join(t.TempDir(), "overrides.json")
		require.NoError(t, os.WriteFile(over, []byte(overrides), 0o600))
	}
	return manifest, over
}

// result is what a run of the command returned.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command with args, stdin and the environment env.
func run(t *testing.T, stdin *bytes.Buffer, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	if stdin == nil {
		stdin = &bytes.Buffer{}
	}
	code := Run(args, stdin, &out, &errOut, func(k string) string { return env[k] })
	r := result{code, out.String(), errOut.String()}
	t.Logf("ratelimitctl %s\n-> %d\n%s%s", strings.Join(args, " "), code, r.stdout, r.stderr)
	return r
}

// admit has the service's limiter admit n calls of key under l.
func admit(t *testing.T, lim runtime.Limiter, l runtime.Limit, key string, n int) {
	t.Helper()
	for i := range n {
		ds, err := lim.Decide(context.Background(), runtime.Request{Limit: l, Key: key})
		require.NoError(t, err)
		require.True(t, ds.Allowed, "call %d", i+1)
	}
}

// requireLine checks that out has a line matching pattern.
func requireLine(t *testing.T, out, pattern string) {
	t.Helper()
	require.Regexp(t, regexp.MustCompile(`(?m)`+pattern), out)
}

// TestShowAndReset has a service's limiter use up a key on a single
// server, then shows it, resets it and shows it again.
func TestShowAndReset(t *testing.T) {
	srv := redistest.StartServer(t)
	service := redislimit.New(srv.Client(t))
	admit(t, service, sendCode, alice, 3)
	manifest, _ := files(t, "")
	args := []string{"-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice, "-redis", srv.URL()}

	r := run(t, nil, nil, append([]string{"show"}, args...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^limit +example\.com/notify\.Notifier\.SendCode$`)
	requireLine(t, r.stdout, `^policy +3 per 1m0s, sliding-log, enforce$`)
	requireLine(t, r.stdout, `^key +alice@example\.com$`)
	requireLine(t, r.stdout, `^remaining +0 of 3$`)
	requireLine(t, r.stdout, `^now +denied: retry after (59|60)\.\d+s, at \d{4}-\d\d-\d\d`)
	requireLine(t, r.stdout, `^resets +in (59|60)\.\d+s, at .* \(all 3 available again\)$`)
	requireLine(t, r.stdout, `^not shown +the service's processes may also deny`)

	r = run(t, nil, nil, append([]string{"reset", "-yes"}, args...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^reset example\.com/notify\.Notifier\.SendCode for key alice@example\.com: 0 of 3 remaining before, 3 now$`)
	requireLine(t, r.stdout, `deny caches may still deny the key for up to`)

	r = run(t, nil, nil, append([]string{"show"}, args...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +3 of 3$`)
	requireLine(t, r.stdout, `^now +allowed`)
	requireLine(t, r.stdout, `^resets +now: Redis holds nothing for this key$`)
	// The service admits the key again.
	admit(t, service, sendCode, alice, 3)
}

// TestResetConfirmation checks that reset asks on a terminal, and refuses
// without -yes when standard input is not one.
func TestResetConfirmation(t *testing.T) {
	srv := redistest.StartServer(t)
	service := redislimit.New(srv.Client(t))
	manifest, _ := files(t, "")
	args := []string{"reset", "-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice, "-redis", srv.URL()}
	admit(t, service, sendCode, alice, 2)

	r := run(t, bytes.NewBufferString("y\n"), nil, args...)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "refusing to reset without -yes: standard input is not a terminal")
	requireRemaining(t, service, sendCode, alice, 1)

	var out, errOut bytes.Buffer
	code := Run(args, &terminal{bytes.NewBufferString("n\n")}, &out, &errOut, func(string) string { return "" })
	require.Equal(t, 1, code)
	require.Contains(t, errOut.String(), "Reset limit example.com/notify.Notifier.SendCode for key alice@example.com (1 of 3 remaining)")
	require.Contains(t, errOut.String(), "not reset")
	requireRemaining(t, service, sendCode, alice, 1)

	out.Reset()
	errOut.Reset()
	code = Run(args, &terminal{bytes.NewBufferString("yes\n")}, &out, &errOut, func(string) string { return "" })
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), "1 of 3 remaining before, 3 now")
	requireRemaining(t, service, sendCode, alice, 3)
}

type terminal struct{ *bytes.Buffer }

func (terminal) IsTerminal() bool { return true }

// requireRemaining checks the key's remaining units as the service sees
// them.
func requireRemaining(t *testing.T, lim *redislimit.Limiter, l runtime.Limit, key string, want int) {
	t.Helper()
	ds, err := lim.Peek(context.Background(), runtime.Request{Limit: l, Key: key})
	require.NoError(t, err)
	require.Equal(t, want, ds.Each[0].Remaining)
}

// TestCluster shows and resets a key on a Redis Cluster, given as
// addresses and as redis:// URLs.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	service := redislimit.New(c.Client(t), redislimit.WithPrefix("svc:"))
	admit(t, service, sendCode, alice, 2)
	manifest, _ := files(t, "")
	addrs := strings.Join(c.Addrs(), ",")
	args := []string{"-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice, "-cluster", addrs, "-prefix", "svc:"}

	r := run(t, nil, nil, append([]string{"show"}, args...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +1 of 3$`)
	requireLine(t, r.stdout, `^store +redis cluster 127\.0\.0\.1:\d+,`)

	// Without the service's prefix, the command finds no count.
	r = run(t, nil, nil, append([]string{"show"}, args[:len(args)-2]...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +3 of 3$`)

	urls := "redis://" + strings.Join(c.Addrs()[:2], ",redis://")
	r = run(t, nil, nil, "reset", "-yes", "-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice, "-cluster", urls, "-prefix", "svc:")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "1 of 3 remaining before, 3 now")
	requireRemaining(t, service, sendCode, alice, 3)
}

// TestHashedKeys shows and resets a key that the service stores hashed.
func TestHashedKeys(t *testing.T) {
	srv := redistest.StartServer(t)
	service := redislimit.New(srv.Client(t), redislimit.WithHashedKeys([]byte(secret)))
	admit(t, service, sendCode, alice, 3)
	manifest, _ := files(t, "")
	args := []string{"-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice, "-redis", srv.URL()}
	env := map[string]string{"SVC_SECRET": secret, "SHORT": "too short"}

	r := run(t, nil, env, append([]string{"show", "-hash-secret-env", "SVC_SECRET"}, args...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +0 of 3$`)
	requireLine(t, r.stdout, `keys hashed`)
	require.NotContains(t, r.stdout+r.stderr, secret)

	// Without the secret, the command looks for the key in the clear.
	r = run(t, nil, env, append([]string{"show"}, args...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +3 of 3$`)

	r = run(t, nil, env, append([]string{"reset", "-yes", "-hash-secret-env", "SVC_SECRET"}, args...)...)
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "0 of 3 remaining before, 3 now")
	requireRemaining(t, service, sendCode, alice, 3)

	// A service that decodes the secret from base64, as docs/redis.md's.
	env["SVC_SECRET_B64"] = base64.StdEncoding.EncodeToString([]byte(secret))
	admit(t, service, sendCode, alice, 1)
	r = run(t, nil, env, append([]string{"show", "-hash-secret-env", "SVC_SECRET_B64", "-hash-secret-encoding", "base64"}, args...)...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +2 of 3$`)
	r = run(t, nil, env, append([]string{"show", "-hash-secret-env", "SVC_SECRET", "-hash-secret-encoding", "base64"}, args...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "-hash-secret-env SVC_SECRET: the variable does not hold base64")
	require.NotContains(t, r.stderr, secret)

	r = run(t, nil, env, append([]string{"show", "-hash-secret-env", "UNSET"}, args...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "-hash-secret-env UNSET: the environment variable UNSET is empty or unset")
	r = run(t, nil, env, append([]string{"show", "-hash-secret-env", "SHORT"}, args...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "the secret holds 9 bytes; WithHashedKeys takes at least 32")
	require.NotContains(t, r.stderr, "too short")
}

// TestOverrides shows a key under the values of the service's overrides
// file, as the service applies them.
func TestOverrides(t *testing.T) {
	srv := redistest.StartServer(t)
	manifest, over := files(t, `{"limits": {
		"example.com/notify.Notifier.SendCode": {"max": 5, "window": "2m"},
		"example.com/tenants.Tenants.Query": {"max": 7},
		"Search.Suggest": {"mode": "off"}
	}}`)
	var ov runtime.Overrides
	require.NoError(t, ov.LoadFile(over))
	service := runtime.Operate(redislimit.New(srv.Client(t)), runtime.WithOverrides(&ov))
	admit(t, service, sendCode, alice, 3)

	r := run(t, nil, nil, "show", "-manifest", manifest, "-overrides", over, "-limit", "Notifier.SendCode", "-key", alice, "-redis", srv.URL())
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^policy +5 per 2m0s, sliding-log, enforce \(overridden by the overrides file\)$`)
	requireLine(t, r.stdout, `^remaining +2 of 5$`)
	requireLine(t, r.stdout, `^resets +in 1m60s|^resets +in 2m0s`)

	// A max computed per call is the override's, or -max's.
	query := runtime.Limit{Name: "example.com/tenants.Tenants.Query", Window: time.Minute, Max: 4, Algorithm: runtime.GCRA}
	admit(t, service, query, "acme", 2)
	r = run(t, nil, nil, "show", "-manifest", manifest, "-overrides", over, "-limit", "Tenants.Query", "-key", "acme", "-redis", srv.URL())
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^policy +7 per 1m0s, gcra, enforce \(overridden by the overrides file; max= planLimit\(ctx\) computed per call\)$`)
	r = run(t, nil, nil, "show", "-manifest", manifest, "-limit", "Tenants.Query", "-key", "acme", "-redis", srv.URL())
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "computes its max for each call (max=planLimit(ctx)): give the key's max with -max N")
	r = run(t, nil, nil, "show", "-manifest", manifest, "-limit", "Tenants.Query", "-key", "acme", "-max", "4", "-redis", srv.URL())
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +2 of 4$`)

	r = run(t, nil, nil, "list", "-manifest", manifest, "-overrides", over)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^NAME +ALGORITHM +MAX +WINDOW +MODE +KEY +OVERRIDDEN$`)
	requireLine(t, r.stdout, `^example\.com/notify\.Notifier\.SendCode +sliding-log +5 +2m0s +enforce +req\.Email +yes$`)
	requireLine(t, r.stdout, `^example\.com/notify\.Notifier\.SendBatch +token-bucket +100 \(burst 10\) +1h0m0s +shadow +req\.Tenant, req\.Region +-$`)
	requireLine(t, r.stdout, `^Jobs\.Render\.inflight +concurrency +2 in flight +lease 30s +enforce +req\.TenantID +-$`)
	requireLine(t, r.stdout, `^example\.com/tenants\.Tenants\.Query +gcra +7 +1m0s +enforce +TenantOf\(ctx\) +yes$`)
	requireLine(t, r.stdout, `^Search\.Suggest +\? +- +- +off +\? +yes$`)

	// With the overrides file alone, a limit it gives a max and a window
	// can be shown, under the runtime's default algorithm.
	_, alone := files(t, `{"limits": {"example.com/notify.Notifier.SendCode": {"max": 5, "window": "2m"}, "Search.Suggest": {"mode": "off"}}}`)
	r = run(t, nil, nil, "show", "-overrides", alone, "-limit", "Notifier.SendCode", "-key", alice, "-redis", srv.URL())
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^policy +5 per 2m0s, sliding-log, enforce \(overridden by the overrides file; algorithm assumed: no manifest declares the limit\)$`)
	requireLine(t, r.stdout, `^remaining +2 of 5$`)
	r = run(t, nil, nil, "show", "-overrides", alone, "-limit", "Search.Suggest", "-key", alice, "-redis", srv.URL())
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "the overrides file gives limit Search.Suggest no max and window, and no manifest declares it: give -manifest file.json")

	// The service refuses an overrides file that would make a limit
	// invalid; so does the command.
	_, bad := files(t, `{"limits": {"example.com/notify.Notifier.SendBatch": {"burst": 0}}}`)
	r = run(t, nil, nil, "list", "-manifest", manifest, "-overrides", bad)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "burst 0 must be at least 1")
}

// TestConcurrencyAndCompositeKeys shows the permits in use of a
// concurrency limit, and a key of several parts.
func TestConcurrencyAndCompositeKeys(t *testing.T) {
	srv := redistest.StartServer(t)
	service := redislimit.New(srv.Client(t))
	ctx := context.Background()
	for range 2 {
		ds, h, err := service.Hold(ctx, runtime.Request{Limit: render, Key: "acme"})
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		t.Cleanup(func() { _ = h.Settle(ctx) })
	}
	manifest, _ := files(t, "")
	r := run(t, nil, nil, "show", "-manifest", manifest, "-limit", "Jobs.Render.inflight", "-key", "acme", "-redis", srv.URL())
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^policy +2 in flight, lease 30s, concurrency, enforce$`)
	requireLine(t, r.stdout, `^in use +2 of 2 permits \(0 free\)$`)
	requireLine(t, r.stdout, `^now +denied: every permit is in use`)
	requireLine(t, r.stdout, `^resets +in (29|30)\.\d+s, at .* \(when the last lease ends, if no call renews it\)$`)

	admit(t, service, sendBatch, runtime.Key("acme", "eu"), 4)
	args := []string{"show", "-manifest", manifest, "-limit", "Notifier.SendBatch", "-redis", srv.URL()}
	r = run(t, nil, nil, append(args, "-key", "acme")...)
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "has a key of 2 parts (req.Tenant, req.Region): give one -key for each, in order")
	r = run(t, nil, nil, append(args, "-key", "acme", "-key", "eu")...)
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^key +acme, eu$`)
	requireLine(t, r.stdout, `^remaining +6 of 10$`)
	requireLine(t, r.stdout, `^mode +shadow`)
}

// TestSentinel shows a key through sentinels.
func TestSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	service := redislimit.New(s.Client(t))
	admit(t, service, sendCode, alice, 1)
	manifest, _ := files(t, "")
	r := run(t, nil, nil, "show", "-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice,
		"-sentinel-master", s.MasterName(), "-sentinel", strings.Join(s.SentinelAddrs(), ","))
	require.Equal(t, 0, r.code)
	requireLine(t, r.stdout, `^remaining +2 of 3$`)
	requireLine(t, r.stdout, `^store +redis master "`+regexp.QuoteMeta(s.MasterName())+`" of sentinels`)
}

// TestErrors checks the messages and statuses of the command's failures.
func TestErrors(t *testing.T) {
	srv := redistest.StartServer(t)
	manifest, _ := files(t, "")
	show := func(extra ...string) []string {
		return append([]string{"show", "-manifest", manifest, "-key", alice}, extra...)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
	}{
		{"misspelt limit", show("-limit", "Notifier.SendCod", "-redis", srv.URL()), nil, 2,
			`no limit named "Notifier.SendCod"; did you mean "example.com/notify.Notifier.SendCode"`},
		{"ambiguous limit", show("-limit", "Notifier", "-redis", srv.URL()), nil, 2, `no limit named "Notifier"; did you mean`},
		{"no limit", show("-redis", srv.URL()), nil, 2, "give the limit's name with -limit"},
		{"missing manifest", []string{"show", "-manifest", "/nonexistent/limits.json", "-limit", "Notifier.SendCode", "-key", alice, "-redis", srv.URL()}, nil, 1,
			"reading the manifest: open /nonexistent/limits.json: no such file or directory (write one with `ratelimitgen -list -json ./... > /nonexistent/limits.json`)"},
		{"no limits", []string{"list"}, nil, 1, "no limits to work with: give -manifest"},
		{"no key", []string{"show", "-manifest", manifest, "-limit", "Notifier.SendCode", "-redis", srv.URL()}, nil, 2, "give the key with -key (limit example.com/notify.Notifier.SendCode counts per req.Email)"},
		{"two keys", show("-limit", "Notifier.SendCode", "-key", "bob@example.com", "-redis", srv.URL()), nil, 2, "has a key of one part (req.Email): give one -key"},
		{"no redis", show("-limit", "Notifier.SendCode"), nil, 2, "say where Redis is"},
		{"bad scheme", show("-limit", "Notifier.SendCode", "-redis", "http://ops:hunter2@"+srv.Addr()), nil, 2,
			"bad -redis URL http://ops:xxxxx@" + srv.Addr() + ": it must begin with redis:// or rediss://"},
		{"bad URL", show("-limit", "Notifier.SendCode", "-redis", "redis://ops:hunter2@host:port/0"), nil, 2, `bad -redis URL: invalid port ":port" after host`},
		{"bad db", show("-limit", "Notifier.SendCode", "-redis", "redis://ops:hunter2@"+srv.Addr()+"/x"), nil, 2, "bad -redis URL redis://ops:xxxxx@" + srv.Addr() + "/x: invalid database number"},
		{"unreachable", show("-limit", "Notifier.SendCode", "-redis", "redis://127.0.0.1:1/0", "-timeout", "1s"), nil, 1,
			// The dial's error, or, on a loaded machine that retries the
			// dial past the timeout, the limiter's.
			"cannot reach redis 127.0.0.1:1 db 0: "},
		{"unknown command", []string{"peek"}, nil, 2, `unknown command "peek"`},
		{"stray argument", show("-limit", "Notifier.SendCode", "-redis", srv.URL(), "extra"), nil, 2, `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.env, tc.args...)
			require.Equal(t, tc.code, r.code)
			require.Contains(t, r.stderr, tc.stderr)
			require.NotContains(t, r.stderr, "hunter2")
			require.Empty(t, r.stdout)
		})
	}
}

// TestACL checks that a password comes from the URL or the environment,
// that a refused password or command is reported as such, and that no
// password is printed.
func TestACL(t *testing.T) {
	srv := redistest.StartServer(t)
	service := redislimit.New(srv.Client(t))
	admit(t, service, sendCode, alice, 1)
	srv.SetUser(t, "ops", docsACL(t, "hunter2")...)
	srv.SetUser(t, "viewer", "on", ">hunter3", "~ratelimit:*", "+get", "+config|get")
	manifest, _ := files(t, "")
	args := []string{"-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice}
	env := map[string]string{PasswordEnv: "hunter2"}

	r := run(t, nil, nil, append([]string{"show", "-redis", "redis://ops:hunter2@" + srv.Addr()}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	requireLine(t, r.stdout, `^remaining +2 of 3$`)
	r = run(t, nil, env, append([]string{"show", "-redis", srv.URL(), "-user", "ops"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	r = run(t, nil, env, append([]string{"reset", "-yes", "-redis", "redis://ops@" + srv.Addr()}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "hunter2")

	r = run(t, nil, map[string]string{PasswordEnv: "wrong"}, append([]string{"show", "-redis", "redis://ops@" + srv.Addr()}, args...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "refused the user and password: WRONGPASS")

	// A user that may read but not delete: show works, reset is refused.
	var noDel []string
	for _, r := range docsACL(t, "hunter4") {
		if r != "+del" {
			noDel = append(noDel, r)
		}
	}
	srv.SetUser(t, "reader", noDel...)
	r = run(t, nil, nil, append([]string{"show", "-redis", "redis://reader:hunter4@" + srv.Addr()}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	r = run(t, nil, nil, append([]string{"reset", "-yes", "-redis", "redis://reader:hunter4@" + srv.Addr()}, args...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "redis "+srv.Addr()+" db 0 refused to reset the state of limit example.com/notify.Notifier.SendCode: NOPERM")
	require.NotContains(t, r.stderr, "hunter")

	r = run(t, nil, nil, append([]string{"show", "-redis", "redis://viewer:hunter3@" + srv.Addr()}, args...)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "redis "+srv.Addr()+" db 0 refused to read the state of limit example.com/notify.Notifier.SendCode: NOPERM")
	require.Contains(t, r.stderr, `(the ACL user needs the commands and keys of docs/redis.md's ACL line, on prefix "ratelimit:")`)
	require.NotContains(t, r.stderr, "hunter")
	require.NotContains(t, r.stderr, alice)
}

// docsACL returns the rules of the ACL line that docs/redis.md gives to
// paste, with password in place of its own, so that the test grants the
// command what the documentation says a limiter needs.
func docsACL(t *testing.T, password string) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/redis.md")
	require.NoError(t, err)
	for line := range strings.Lines(string(doc)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ACL SETUSER ratelimit "); ok {
			rules := strings.Fields(rest)
			for i, r := range rules {
				if strings.HasPrefix(r, ">") {
					rules[i] = ">" + password
				}
			}
			return rules
		}
	}
	t.Fatal("docs/redis.md gives no line beginning with ACL SETUSER ratelimit")
	return nil
}

// TestKeysStayOutOfErrors checks that a failure's message holds no key:
// keys are personal data, and errors end in logs.
func TestKeysStayOutOfErrors(t *testing.T) {
	manifest, _ := files(t, "")
	r := run(t, nil, nil, "show", "-manifest", manifest, "-limit", "Notifier.SendCode", "-key", alice, "-redis", "redis://127.0.0.1:1/0", "-timeout", "500ms")
	require.Equal(t, 1, r.code)
	require.NotContains(t, r.stderr, alice)
}

// TestGeneratorManifests reads every manifest that the generator's golden
// tests hold, so that the command reads what `ratelimitgen -list -json`
// writes: every limit is valid, with -max where each call computes it.
func TestGeneratorManifests(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/*/want/manifest.json")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		limits, err := loadLimits(path, "")
		require.NoError(t, err, path)
		require.NotEmpty(t, limits, path)
		for _, k := range limits {
			l := k.limit
			if l.Max == 0 {
				require.NotEmpty(t, k.maxExpr, "%s: %s", path, l.Name)
				l.Max = 10
			}
			require.NoError(t, l.Validate(), "%s: %s", path, l.Name)
			require.NotEmpty(t, k.where)
		}
	}
}
