package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
)

// demoStatuses is what the demo must show: three codes, a 429 for the same
// mailbox, bob's code; five wrong guesses, a 429 for the right code, bob's
// verification.
var demoStatuses = []int{200, 200, 200, 429, 200, 400, 400, 400, 400, 400, 429, 200}

var statusLine = regexp.MustCompile(`(?m)^  -> (\d{3}) `)

func statusesIn(out string) []int {
	var got []int
	for _, m := range statusLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	return got
}

func TestDemoInMemory(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(t.Context(), &out, config{addr: "127.0.0.1:0"}))
	assert.Equal(t, demoStatuses, statusesIn(out.String()), "output:\n%s", out.String())
	assert.Contains(t, out.String(), "limiter: in memory")
	assert.Contains(t, out.String(), "     Retry-After: 60\n")
	assert.Contains(t, out.String(), `     RateLimit-Policy: "CodeService.SendCode";q=3;w=60`+"\n")
	// The scrape counts what the demo did: SendCode admitted 4 and denied
	// 1; VerifyCode admitted 6 (five wrong codes, bob's) and denied 1.
	assert.Contains(t, out.String(), "GET /metrics\n"+
		`  ratelimit_decisions_total{limit="CodeService.SendCode",result="allowed",source="store"} 4`+"\n"+
		`  ratelimit_decisions_total{limit="CodeService.SendCode",result="limited",source="store"} 1`+"\n"+
		`  ratelimit_decisions_total{limit="CodeService.VerifyCode",result="allowed",source="store"} 6`+"\n"+
		`  ratelimit_decisions_total{limit="CodeService.VerifyCode",result="limited",source="store"} 1`+"\n")
}

// The demo against a real Redis: the counts must live there, and a second
// run must start afresh although the first run's counts have not expired.
func TestDemoOnRedis(t *testing.T) {
	s := redistest.StartServer(t)
	cfg := config{addr: "127.0.0.1:0", redisURL: "redis://" + s.Addr() + "/0", keyPrefix: "verifycode:"}
	for run1 := range 2 {
		var out strings.Builder
		require.NoError(t, run(t.Context(), &out, cfg), "run %d, output:\n%s", run1+1, out.String())
		assert.Equal(t, demoStatuses, statusesIn(out.String()), "run %d, output:\n%s", run1+1, out.String())
		assert.Contains(t, out.String(), "limiter: Redis")
	}
	// Storage keys have a hash tag after the prefix; the limiters' count
	// of one another does not.
	keys, err := s.Client(t).Keys(t.Context(), "verifycode:demo:*:{*").Result()
	require.NoError(t, err)
	// Two runs, each with alice's and bob's keys for two limits.
	assert.Len(t, keys, 8, "keys: %q", keys)
}

func TestBadRedisURL(t *testing.T) {
	err := run(t.Context(), io.Discard, config{addr: "127.0.0.1:0", redisURL: "http://user:s3cret@127.0.0.1:6379"})
	require.ErrorContains(t, err, "REDIS_URL is not a Redis URL")
	assert.NotContains(t, err.Error(), "s3cret")

	s := redistest.StartServer(t)
	s.Stop(t)
	err = run(t.Context(), io.Discard, config{addr: "127.0.0.1:0", redisURL: "redis://:s3cret@" + s.Addr() + "/0"})
	require.ErrorContains(t, err, "cannot reach Redis at "+s.Addr())
	assert.NotContains(t, err.Error(), "s3cret")
}

// With -serve the program prints its address and the mailed codes, serves
// until its context ends, and then returns nil.
func TestServe(t *testing.T) {
	srv := startServing(t, config{addr: "127.0.0.1:0", serve: true})
	post := func(path, body string) int {
		resp, err := http.Post(srv.base+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post("/codes", `{"email":"alice@example.com"}`))
	code := srv.nextLine("mail to alice@example.com: your verification code is ")
	require.Equal(t, http.StatusOK, post("/codes/verify", `{"email":"alice@example.com","code":"`+code+`"}`))

	resp, err := http.Get(srv.base + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(metrics), `ratelimit_decisions_total{limit="CodeService.VerifyCode",result="allowed",source="store"} 1`)
	assert.Contains(t, string(metrics), `ratelimit_decision_duration_seconds_count{limit="CodeService.SendCode"} 1`)

	require.NoError(t, srv.stop())
}

// serving is the program run with -serve by startServing.
type serving struct {
	base     string                     // the URL it serves on
	nextLine func(prefix string) string // the rest of its next output line starting with prefix
	stop     func() error               // ends it and returns run's error
}

// startServing runs the program with cfg, which must have serve set, and
// returns once it serves.
func startServing(t *testing.T, cfg config) *serving {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, pw, cfg)
		_ = pw.CloseWithError(io.EOF)
		done <- err
	}()
	// Read the output on its own goroutine: the handler prints each mail
	// before it answers, so reading only between requests would deadlock.
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	srv := &serving{
		nextLine: func(prefix string) string {
			t.Helper()
			for line := range lines {
				if rest, ok := strings.CutPrefix(line, prefix); ok {
					return rest
				}
			}
			t.Fatalf("run printed no line starting with %q", prefix)
			return ""
		},
		stop: func() error {
			cancel()
			return <-done
		},
	}
	srv.base, _, _ = strings.Cut(srv.nextLine("serving on "), ";")
	return srv
}

// TestOverridesFile: the limits follow the -overrides file while the
// program runs: a higher Max at start-up, then shadow mode after an edit;
// a malformed edit, and one that would break the limit, leave the last
// good file in force; a misspelt name is logged.
func TestOverridesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	write := func(contents string) {
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(contents), 0o600))
		require.NoError(t, os.Rename(tmp, path))
	}
	write(`{"limits": {"CodeService.SendCode": {"max": 4}}}`)
	errLog := &lockedBuffer{}
	srv := startServing(t, config{addr: "127.0.0.1:0", serve: true, overridesFile: path, errLog: errLog})
	send := func() *http.Response {
		resp, err := http.Post(srv.base+"/codes", "application/json", strings.NewReader(`{"email":"alice@example.com"}`))
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for range 4 {
		require.Equal(t, http.StatusOK, send().StatusCode)
	}
	denied := send()
	require.Equal(t, http.StatusTooManyRequests, denied.StatusCode)
	require.Equal(t, `"CodeService.SendCode";q=4;w=60`, denied.Header.Get("RateLimit-Policy"))

	write(`{"limits": {"CodeService.SendCode": {"max": 4, "mode": "shadow"}}}`)
	require.Eventually(t, func() bool { return strings.Contains(errLog.String(), "rate-limit overrides reloaded") },
		30*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusOK, send().StatusCode, "in shadow mode the limit no longer denies")

	write(`{"limits": {"CodeService.SendCode": {"max": 0}}}`)
	require.Eventually(t, func() bool { return strings.Contains(errLog.String(), "max 0 must be at least 1") },
		30*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusOK, send().StatusCode, "the last good file stays in force")

	// A file that parses but would make every call of the limit fail is
	// refused too, checked against notify.RateLimits().
	write(`{"limits": {"CodeService.SendCode": {"window": "2000000h"}}}`)
	require.Eventually(t, func() bool { return strings.Contains(errLog.String(), `CodeService.SendCode\": its calls would fail`) },
		30*time.Second, 10*time.Millisecond, "log: %s", errLog)
	require.Equal(t, http.StatusOK, send().StatusCode, "the last good file stays in force")

	// A name that matches no limit is in force, changing nothing, and is
	// logged: the limit is enforced again, at its Max of 3.
	write(`{"limits": {"CodeService.SendCod": {"mode": "off"}}}`)
	require.Eventually(t, func() bool {
		return strings.Contains(errLog.String(), `rate-limit overrides name no limit of this program, so they change nothing`) &&
			strings.Contains(errLog.String(), `names=[CodeService.SendCod]`)
	}, 30*time.Second, 10*time.Millisecond, "log: %s", errLog)
	require.Equal(t, http.StatusTooManyRequests, send().StatusCode)

	require.NoError(t, srv.stop())
}

// lockedBuffer is an io.Writer that the server's log and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
