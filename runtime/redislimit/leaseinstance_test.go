package redislimit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The lease tests run instances in processes of their own: this test
// binary started again with leaseInstanceEnv set, which TestMain sees. An
// instance connects and writes "ready"; once it reads "go" it decides the
// one key of its limit from its goroutines until its stdin closes, writing
// one line per unit admitted as it goes ("a lo hi source", lo and hi in µs
// of the wall clock just before and just after the call, which Redis's TIME
// reads on the same host), so that a parent that kills it has every
// admission but those of calls under way. Every leaseProgressEvery while
// it decides it writes "p" and the count of its decisions so far by source
// as JSON (as the source's name; "denied", "error"), so that a test can
// run until the instances have got somewhere, however slowly a loaded
// machine lets them call. It ends with "done" and the same counts, final.

// leaseProgressEvery is how often an instance reports its decisions.
const leaseProgressEvery = 10 * time.Millisecond

// leaseInstanceEnv holds the JSON leaseInstanceConfig of an instance.
const leaseInstanceEnv = "REDISLIMIT_TEST_LEASE_INSTANCE"

// leaseInstanceConfig is what one instance decides, and how.
type leaseInstanceConfig struct {
	Addr  string
	Limit runtime.Limit
	// Period is WithLeases's; Instances is WithInstances's.
	Period    time.Duration
	Instances int
	// Goroutines call at once, as fast as they can for Busy out of every
	// Busy+Idle of the wall clock (always when Idle is 0), so that every
	// instance pauses at once, leases in hand, while the limit refills.
	Goroutines int
	Busy, Idle time.Duration
	// Cost is each call's units (0: 1), one line written per unit.
	Cost int64
}

// runLeaseInstance is the instance program; it returns the exit code.
func runLeaseInstance(cfgJSON string) int {
	var cfg leaseInstanceConfig
	client, ok := instanceClient("lease instance", leaseInstanceEnv, cfgJSON, &cfg, func() string { return cfg.Addr })
	if !ok {
		return 2
	}
	defer client.Close()
	lim := New(client, WithLeases(cfg.Period), WithInstances(cfg.Instances), WithFailurePolicy(FailClosed))
	stop, ok := awaitGo("lease instance")
	if !ok {
		return 2
	}
	var (
		out      sync.Mutex
		bySource sync.Map // source name -> *atomic.Int64
		wg       sync.WaitGroup
	)
	count := func(s string) {
		c, _ := bySource.LoadOrStore(s, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
	}
	for range cfg.Goroutines {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lo := time.Now().UnixMicro()
				ds, err := lim.Decide(context.Background(), runtime.Request{Limit: cfg.Limit, Key: "hot", Cost: cfg.Cost})
				hi := time.Now().UnixMicro()
				switch {
				case err != nil:
					count("error")
				case ds.Allowed:
					count(ds.Source.String())
					out.Lock()
					// Unbuffered: a line written is a line the parent has.
					for range max(cfg.Cost, 1) {
						fmt.Fprintf(os.Stdout, "a %d %d %s\n", lo, hi, ds.Source)
					}
					out.Unlock()
				default:
					count("denied")
				}
				if cycle := int64(cfg.Busy + cfg.Idle); cfg.Idle > 0 {
					if in := time.Now().UnixNano() % cycle; in >= int64(cfg.Busy) {
						time.Sleep(time.Duration(cycle - in))
					}
				}
			}
		})
	}
	report := func(prefix string) {
		counts := map[string]int64{}
		bySource.Range(func(k, v any) bool {
			counts[k.(string)] = v.(*atomic.Int64).Load()
			return true
		})
		b, _ := json.Marshal(counts)
		out.Lock()
		fmt.Fprintf(os.Stdout, "%s %s\n", prefix, b)
		out.Unlock()
	}
	reportEvery(&wg, stop, leaseProgressEvery, func() { report("p") })
	<-stop
	wg.Wait()
	report("done")
	return 0
}

// leaseInstance is a running instance program, seen from the test.
type leaseInstance struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// mu guards what the instance reported so far.
	mu        sync.Mutex
	admitted  []admitted
	progress  map[string]int64 // the last counts reported, done or not
	bySource  map[string]int64 // once done
	stderr    *syncBuffer
	ready     chan struct{}
	exited    chan struct{}
	lineCount atomic.Int64
}

// startLeaseInstance starts an instance program deciding per cfg and
// waits until it is ready. t.Cleanup kills it.
func startLeaseInstance(t *testing.T, cfg leaseInstanceConfig) *leaseInstance {
	t.Helper()
	in := launchLeaseInstance(t, cfg)
	in.awaitReady(t)
	return in
}

// launchLeaseInstance starts an instance program deciding per cfg.
// t.Cleanup kills it.
func launchLeaseInstance(t *testing.T, cfg leaseInstanceConfig) *leaseInstance {
	t.Helper()
	cfgJSON, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0])
	// A binary built with -race would sleep a second on exit.
	cmd.Env = append(os.Environ(), leaseInstanceEnv+"="+string(cfgJSON), "GORACE=atexit_sleep_ms=0")
	in := &leaseInstance{cmd: cmd, stderr: &syncBuffer{}, ready: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = in.stderr
	in.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, redistest.StartProcess(cmd))
	go in.read(stdout)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-in.exited
	})
	return in
}

// awaitReady waits until the instance is ready.
func (in *leaseInstance) awaitReady(t *testing.T) {
	t.Helper()
	select {
	case <-in.ready:
	case <-in.exited:
		t.Fatalf("lease instance exited before ready: %s", in.stderr.String())
	case <-time.After(instanceStartBound):
		t.Fatalf("lease instance not ready within %v: %s", instanceStartBound, in.stderr.String())
	}
}

// startLeaseInstances starts n instance programs deciding per cfg, all at
// once, and waits until they are ready.
func startLeaseInstances(t *testing.T, n int, cfg leaseInstanceConfig) []*leaseInstance {
	t.Helper()
	ins := make([]*leaseInstance, n)
	for i := range ins {
		ins[i] = launchLeaseInstance(t, cfg)
	}
	for _, in := range ins {
		in.awaitReady(t)
	}
	return ins
}

// read reads the instance's lines until it exits.
func (in *leaseInstance) read(stdout io.Reader) {
	defer close(in.exited)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "ready":
			close(in.ready)
		case strings.HasPrefix(line, "a "):
			f := strings.Fields(line)
			lo, _ := strconv.ParseInt(f[1], 10, 64)
			hi, _ := strconv.ParseInt(f[2], 10, 64)
			in.mu.Lock()
			in.admitted = append(in.admitted, admitted{lo, hi})
			in.mu.Unlock()
			in.lineCount.Add(1)
		case strings.HasPrefix(line, "p "):
			var m map[string]int64
			if json.Unmarshal([]byte(line[2:]), &m) == nil {
				in.mu.Lock()
				in.progress = m
				in.mu.Unlock()
			}
		case strings.HasPrefix(line, "done "):
			var m map[string]int64
			if json.Unmarshal([]byte(line[5:]), &m) == nil {
				in.mu.Lock()
				in.progress = m
				in.bySource = m
				in.mu.Unlock()
			}
		}
	}
	_ = in.cmd.Wait()
}

// start lets the instance decide.
func (in *leaseInstance) start(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(in.stdin, "go\n")
	require.NoError(t, err)
}

// stop tells the instance to stop deciding.
func (in *leaseInstance) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, in.stdin.Close())
}

// finish waits for the instance, stopped, to exit, and returns its
// decisions' counts by source.
func (in *leaseInstance) finish(t *testing.T) map[string]int64 {
	t.Helper()
	select {
	case <-in.exited:
	case <-time.After(instanceReportBound):
		t.Fatalf("lease instance did not exit: %s", in.stderr.String())
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	require.NotNil(t, in.bySource, "lease instance's report; stderr: %s", in.stderr.String())
	return in.bySource
}

// decided returns the counts of the instance's decisions by source as it
// last reported them (nil before its first report): its decisions so far
// but those of the last leaseProgressEvery or so.
func (in *leaseInstance) decided() map[string]int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.progress)
}

// admittedSince returns the units the instance reported admitted in calls
// it began at us (µs of the wall clock) or later.
func (in *leaseInstance) admittedSince(us int64) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, a := range in.admitted {
		if a.lo >= us {
			n++
		}
	}
	return n
}

// admissions returns what the instance reported admitted so far.
func (in *leaseInstance) admissions() []admitted {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]admitted(nil), in.admitted...)
}
