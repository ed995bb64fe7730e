package redislimit

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Some tests need app instances whose whole process is frozen or starved
// of CPU while Redis stays healthy, as a paused VM, a stop-the-world or a
// throttled container would do. Goroutines cannot be frozen from within, so
// such an instance is this test binary started again with instanceEnv set:
// TestMain then runs the instance program below instead of the tests.
//
// The protocol, on the instance's stdin and stdout: the instance connects
// and writes "ready"; the parent may then freeze it or limit its CPU, and
// writes "go"; the instance decides until its stdin closes (or
// instanceMaxRun passes, should the parent vanish), then writes one JSON
// instanceReport and exits.

// instanceEnv holds the JSON instanceConfig of an instance program.
const instanceEnv = "REDISLIMIT_TEST_INSTANCE"

// instanceMaxRun ends an instance whose parent never closes its stdin.
const instanceMaxRun = 2 * time.Minute

func TestMain(m *testing.M) {
	if cfg := os.Getenv(instanceEnv); cfg != "" {
		os.Exit(runInstance(cfg))
	}
	if cfg := os.Getenv(leaseInstanceEnv); cfg != "" {
		os.Exit(runLeaseInstance(cfg))
	}
	os.Exit(m.Run())
}

// instanceConfig is what one instance decides.
type instanceConfig struct {
	// Addr is the redis-server's address.
	Addr string
	// Name, Window and Max are the limit.
	Name   string
	Window time.Duration
	Max    int
	// Every instance walks the same keys, 0, 1, 2, ..., deciding each
	// Attempts times (concurrently, from different goroutines) before the
	// next, so that the instances contend for every key they share.
	Attempts   int
	Goroutines int
	// MaxKeys bounds the walk, and the report.
	MaxKeys int
	// Timeout is the limiter's WithTimeout; Instances its WithInstances,
	// which sets FailLocal's bound.
	Timeout   time.Duration
	Instances int
}

// instanceReport is what one instance saw.
type instanceReport struct {
	// Admitted[k] is how many of its decisions on key k were admissions;
	// Fallback[k] how many of those the failure policy made, not Redis.
	Admitted, Fallback []byte
	// Sources counts decisions by their Decisions.Source.
	Sources map[string]int64
	// Degraded counts WithOnDegraded events; Causes holds the first few
	// distinct errors they carried.
	Degraded int64
	Causes   []string
	// Errors counts decisions that returned an error; FirstError is one.
	Errors     int64
	FirstError string
}

// instanceClient is how every instance program starts: it decodes cfgJSON,
// the value of env, into cfg, and connects to the Redis at addr (read from
// cfg), reporting on stderr, as name, what failed.
func instanceClient(name, env, cfgJSON string, cfg any, addr func() string) (*redis.Client, bool) {
	if err := json.Unmarshal([]byte(cfgJSON), cfg); err != nil {
		fmt.Fprintf(os.Stderr, "%s: bad %s: %v\n", name, env, err)
		return nil, false
	}
	client := redis.NewClient(&redis.Options{Addr: addr()})
	if err := client.Ping(context.Background()).Err(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: PING %s: %v\n", name, addr(), err)
		_ = client.Close()
		return nil, false
	}
	return client, true
}

// awaitGo tells the test an instance program is ready and waits for its
// "go". The channel is closed when the test closes the program's stdin,
// which asks it to stop.
func awaitGo(name string) (<-chan struct{}, bool) {
	fmt.Println("ready")
	in := bufio.NewReader(os.Stdin)
	if line, err := in.ReadString('\n'); err != nil || line != "go\n" {
		fmt.Fprintf(os.Stderr, "%s: expected go on stdin, got %q (%v)\n", name, line, err)
		return nil, false
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(stop)
	}()
	return stop, true
}

// instanceKey is the key of index k.
func instanceKey(k int) string { return fmt.Sprintf("fresh-%d@example.com", k) }

// runInstance is the instance program; it returns the exit code.
func runInstance(cfgJSON string) int {
	var cfg instanceConfig
	client, ok := instanceClient("instance", instanceEnv, cfgJSON, &cfg, func() string { return cfg.Addr })
	if !ok {
		return 2
	}
	defer client.Close()
	var (
		degraded atomic.Int64
		causesMu sync.Mutex
		causes   = map[string]bool{}
		report   instanceReport
	)
	lim := New(client, WithTimeout(cfg.Timeout), WithInstances(cfg.Instances), WithOnDegraded(func(ev DegradedEvent) {
		degraded.Add(1)
		causesMu.Lock()
		defer causesMu.Unlock()
		if msg := fmt.Sprint(ev.Err); !causes[msg] && len(causes) < 5 {
			causes[msg] = true
			report.Causes = append(report.Causes, msg)
		}
	}))
	l := runtime.Limit{Name: cfg.Name, Window: cfg.Window, Max: cfg.Max}

	stop, ok := awaitGo("instance")
	if !ok {
		return 2
	}
	timeout := time.NewTimer(instanceMaxRun)
	defer timeout.Stop()

	var (
		next     atomic.Int64
		admitted = make([]atomic.Int32, cfg.MaxKeys)
		fallback = make([]atomic.Int32, cfg.MaxKeys)
		sources  [runtime.SourceFailOpen + 1]atomic.Int64
		errs     atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
		done     = make(chan struct{})
	)
	for range cfg.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				k := int(next.Add(1)-1) / cfg.Attempts
				if k >= cfg.MaxKeys {
					return
				}
				ds, err := lim.Decide(context.Background(), runtime.Request{Limit: l, Key: instanceKey(k)})
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				if int(ds.Source) < len(sources) {
					sources[ds.Source].Add(1)
				}
				if ds.Allowed {
					admitted[k].Add(1)
					if ds.Source == runtime.SourceFallback || ds.Source == runtime.SourceFailOpen {
						fallback[k].Add(1)
					}
				}
			}
		}()
	}
	select {
	case <-stop:
	case <-timeout.C:
	}
	close(done)
	wg.Wait()

	walked := min(int(next.Load())/cfg.Attempts+1, cfg.MaxKeys)
	report.Admitted, report.Fallback = make([]byte, walked), make([]byte, walked)
	for k := range report.Admitted {
		report.Admitted[k] = byte(admitted[k].Load())
		report.Fallback[k] = byte(fallback[k].Load())
	}
	report.Sources = map[string]int64{}
	for s := range sources {
		report.Sources[runtime.Source(s).String()] = sources[s].Load()
	}
	report.Degraded = degraded.Load()
	report.Errors = errs.Load()
	if e, ok := firstErr.Load().(string); ok {
		report.FirstError = e
	}
	causesMu.Lock()
	defer causesMu.Unlock()
	if err := json.NewEncoder(os.Stdout).Encode(report); err != nil {
		fmt.Fprintf(os.Stderr, "instance: writing the report: %v\n", err)
		return 2
	}
	return 0
}

// Bounds for waiting on an instance; they only decide when to give up.
const (
	instanceStartBound  = 30 * time.Second
	instanceReportBound = 60 * time.Second
)

// instance is a running instance program, seen from the test.
type instance struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its stdout, line by line
	stderr *syncBuffer
	done   chan struct{} // closed once it has exited and been reaped
	err    error         // cmd.Wait's, once done is closed
}

// startInstance starts an instance program deciding per cfg and waits until
// it is ready. t.Cleanup resumes it (it may be frozen) and kills it.
func startInstance(t *testing.T, cfg instanceConfig) *instance {
	t.Helper()
	return startProgram(t, instanceEnv, cfg)
}

// startProgram starts this test binary again as the program that env
// selects, with cfg as JSON in env, and waits until it writes "ready".
// t.Cleanup resumes it (it may be frozen) and kills it.
func startProgram(t *testing.T, env string, cfg any) *instance {
	t.Helper()
	cfgJSON, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env+"="+string(cfgJSON))
	in := &instance{cmd: cmd, lines: make(chan string, 4), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = in.stderr
	in.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, redistest.StartProcess(cmd))
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			in.lines <- sc.Text()
		}
		close(in.lines)
		in.err = cmd.Wait()
		close(in.done)
	}()
	t.Cleanup(func() {
		// A frozen process dies of SIGKILL too, but resuming first leaves
		// nothing stopped should the kill fail.
		_ = redistest.ResumeProcess(cmd.Process)
		_ = cmd.Process.Kill()
		select {
		case <-in.done:
		case <-time.After(instanceReportBound):
			t.Errorf("instance %d did not exit after SIGKILL", cmd.Process.Pid)
		}
	})
	if line := in.line(t, instanceStartBound); line != "ready" {
		t.Fatalf("instance %d: expected ready, got %q\nstderr:\n%s", cmd.Process.Pid, line, in.stderr.String())
	}
	return in
}

// line returns the instance's next line of output.
func (in *instance) line(t *testing.T, bound time.Duration) string {
	t.Helper()
	select {
	case line, ok := <-in.lines:
		if !ok {
			<-in.done
			t.Fatalf("instance %d exited (%v) without a word\nstderr:\n%s", in.cmd.Process.Pid, in.err, in.stderr.String())
		}
		return line
	case <-time.After(bound):
		t.Fatalf("instance %d said nothing within %v\nstderr:\n%s", in.cmd.Process.Pid, bound, in.stderr.String())
	}
	return ""
}

// start lets the instance decide.
func (in *instance) start(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(in.stdin, "go\n")
	require.NoError(t, err)
}

// finishInstances stops the instances' decisions, all at once, and returns
// their reports, once each has exited cleanly (a data race it found, for
// one, makes it fail).
func finishInstances(t *testing.T, instances []*instance) []instanceReport {
	t.Helper()
	for _, in := range instances {
		require.NoError(t, in.stdin.Close())
	}
	var reports []instanceReport
	for _, in := range instances {
		line := in.line(t, instanceReportBound)
		select {
		case <-in.done:
		case <-time.After(instanceReportBound):
			t.Fatalf("instance %d did not exit after its report", in.cmd.Process.Pid)
		}
		require.NoError(t, in.err, "instance %d; stderr:\n%s", in.cmd.Process.Pid, in.stderr.String())
		var rep instanceReport
		require.NoError(t, json.Unmarshal([]byte(line), &rep), "instance %d's report", in.cmd.Process.Pid)
		reports = append(reports, rep)
	}
	return reports
}

// auditInstances checks the instances' reports against what the limiter
// promises. Always: no decision returns an error (FailLocal), Redis
// decided some of each instance's calls, a key that only Redis admitted
// was admitted at most cfg.Max times across them all, and a key that the
// fallback admitted too at most FailLocal's bound, Max plus each
// instance's share (docs/redis.md). And when Redis answered within the
// limiters' timeout all along (worst, measured by watchRedis), so that
// only the instances stalled: Redis, or the deny cache, made every
// decision, and no instance saw Redis degraded.
func auditInstances(t *testing.T, cfg instanceConfig, reports []instanceReport, worst time.Duration) {
	t.Helper()
	var totals, fallbacks []int
	sources := map[string]int64{}
	var decisions, admissions, degraded, errs int64
	for i, rep := range reports {
		for k, n := range rep.Admitted {
			if k == len(totals) {
				totals, fallbacks = append(totals, 0), append(fallbacks, 0)
			}
			totals[k] += int(n)
			fallbacks[k] += int(rep.Fallback[k])
			admissions += int64(n)
		}
		for s, n := range rep.Sources {
			sources[s] += n
			decisions += n
		}
		degraded += rep.Degraded
		errs += rep.Errors
		t.Logf("instance %d: %d keys, sources %v, %d degraded events %q, %d errors %q",
			i, len(rep.Admitted), rep.Sources, rep.Degraded, rep.Causes, rep.Errors, rep.FirstError)
	}
	n := max(cfg.Instances, 1)
	bound := cfg.Max + n*max(1, cfg.Max/n)
	over, overBound, worstExact, worstAny := 0, 0, 0, 0
	for k, total := range totals {
		if fallbacks[k] == 0 {
			worstExact = max(worstExact, total)
			if total > cfg.Max {
				over++
			}
		} else if total > bound {
			overBound++
		}
		worstAny = max(worstAny, total)
	}
	t.Logf("%d instances x %d goroutines, %d attempts per key per instance, Max %d per %v: %d keys, %d decisions, %d admissions; worst key %d (%d of those only Redis admitted); sources %v; %d degraded events; %d errors; Redis answered the test's PINGs within %v",
		len(reports), cfg.Goroutines, cfg.Attempts, cfg.Max, cfg.Window, len(totals), decisions, admissions, worstAny, worstExact, sources, degraded, errs, worst)

	require.Zero(t, errs, "FailLocal never returns an error")
	for i, rep := range reports {
		require.Positive(t, rep.Sources[runtime.SourceStore.String()], "instance %d: Redis decided nothing", i)
	}
	require.Zero(t, over, "keys that only Redis admitted, more than Max across the instances (worst %d)", worstExact)
	require.Zero(t, overBound, "keys admitted beyond FailLocal's bound of %d (Max %d, %d instances; worst %d)", bound, cfg.Max, n, worstAny)
	timeout := cmp.Or(cfg.Timeout, defaultTimeout)
	if worst+redisWatchEvery >= timeout {
		t.Logf("Redis took %v to answer the test's PING: its own delay may have reached the limiters' timeout of %v, so decisions by the failure policy are allowed within its bound", worst, timeout)
		return
	}
	require.Zero(t, sources[runtime.SourceFallback.String()]+sources[runtime.SourceFailOpen.String()],
		"decisions taken from Redis although it answered within %v all along: the app's own stall was taken for Redis's", worst)
	require.Zero(t, degraded, "degraded events although Redis answered within %v all along", worst)
}

// redisWatchEvery is how often watchRedis asks Redis.
const redisWatchEvery = 20 * time.Millisecond

// watchRedis asks srv for PING every redisWatchEvery from the test's own
// process until the test calls the function it returns, which returns the
// longest Redis took to answer: an upper bound of how long Redis kept any
// client waiting, give or take redisWatchEvery. A long answer does not
// prove Redis was slow (the test's process shares a loaded machine with
// it), only that the test cannot tell.
func watchRedis(t *testing.T, srv *redistest.Server) func() time.Duration {
	t.Helper()
	c := srv.Client(t)
	stop, done := make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		tick := time.NewTicker(redisWatchEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- worst
				return
			case <-tick.C:
			}
			start := time.Now()
			if err := c.Ping(context.Background()).Err(); err != nil {
				// Unanswered: as long as the limiters' patience at least.
				worst = max(worst, time.Hour)
			}
			worst = max(worst, time.Since(start))
		}
	}()
	return func() time.Duration {
		close(stop)
		return <-done
	}
}
