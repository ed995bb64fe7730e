package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkClientInstructions counts what each decision costs the calling
// process in instructions: the library, go-redis and the Go runtime's
// scheduler and collector, in user space (the kernel's share, syscalls, is
// not counted). Unlike CPU time, the count is the same from run to run,
// whatever else the machine does, so it shows where client time goes on a
// machine whose timings are noise.
//
// Each row runs this test binary again, under valgrind's cachegrind, as a
// client of one redis-server that runs at full speed: once making n
// decisions and once 2n, after the same warm-up, from callers goroutines
// over 10,000 keys (Max 100 per second). client-instr/op is the difference
// over n, which leaves out start-up and warm-up. The client runs with
// GOMAXPROCS=1: valgrind runs one thread at a time, and idle processors'
// spinning, which would count, depends on the timing. Its pool is then
// go-redis's default for one processor (10 connections). Give it a fixed
// count, as in
//
//	go test -run '^$' -bench ClientInstructions -benchtime 25600x
func BenchmarkClientInstructions(b *testing.B) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		b.Fatal("valgrind not found in PATH; install it with: sudo apt-get install -y valgrind")
	}
	c := startRedis(b)
	names := []string{"ratelimitgen-gcra", "ceiling-gcra", "ratelimitgen-sliding-log", "ceiling-sliding-log", "redis_rate"}
	for _, callers := range []int{1, 256} {
		for _, name := range names {
			b.Run(fmt.Sprintf("lib=%s/callers=%d", name, callers), func(b *testing.B) {
				// Every caller makes as many calls.
				n := (max(b.N, callers) + callers - 1) / callers * callers
				var counts [2]int64
				for i := range counts {
					flush(b, c)
					counts[i] = clientInstructions(b, clientRun{lib: name, addr: c.Options().Addr, callers: callers, n: (i + 1) * n})
				}
				b.ReportMetric(float64(counts[1]-counts[0])/float64(n), "client-instr/op")
			})
		}
	}
}

// clientInstructions runs r in this test binary under cachegrind and
// returns the instructions it ran.
func clientInstructions(b *testing.B, r clientRun) int64 {
	b.Helper()
	out := filepath.Join(b.TempDir(), "cachegrind.out")
	cmd := exec.Command("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file="+out, os.Args[0])
	// Valgrind's signal handling does not survive Go's asynchronous
	// preemption.
	cmd.Env = append(os.Environ(), clientRunEnv+"="+r.String(), "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s under cachegrind: %v\n%s", r, err, msg)
	}
	return summary(b, out)
}

// clientRunEnv names the variable that makes this test binary a client of
// BenchmarkClientInstructions instead of running tests (see TestMain).
const clientRunEnv = "RATELIMITGEN_BENCH_CLIENT_RUN"

// A clientRun is what one client process of BenchmarkClientInstructions
// does: n decisions of lib against the redis-server at addr, from callers
// goroutines.
type clientRun struct {
	lib, addr  string
	callers, n int
}

func (r clientRun) String() string {
	return fmt.Sprintf("%s %s %d %d", r.lib, r.addr, r.callers, r.n)
}

func parseClientRun(s string) (clientRun, error) {
	var r clientRun
	_, err := fmt.Sscanf(s, "%s %s %d %d", &r.lib, &r.addr, &r.callers, &r.n)
	if err == nil && (r.callers < 1 || r.n < r.callers) {
		err = fmt.Errorf("want 1 <= callers <= n, have %d and %d", r.callers, r.n)
	}
	return r, err
}

// run makes r's decisions after a warm-up (the scripts loaded, the pool's
// connections made, the goroutines' stacks grown).
func (r clientRun) run() error {
	var ct *contender
	for _, c := range benchContenders() {
		if c.name == r.lib {
			ct = &c
			break
		}
	}
	if ct == nil {
		return fmt.Errorf("no contender %q", r.lib)
	}
	c := newClient(r.addr)
	defer c.Close()
	ks := keySets[1]
	decide, err := ct.build(c, ks.spec, time.Now)
	if err != nil {
		return err
	}
	calls := func(n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, r.callers)
		for g := range r.callers {
			wg.Go(func() {
				// As in runParallel, the goroutines start at different keys.
				for i := range n / r.callers {
					if _, err := decide(context.Background(), ks.keys[(g*7919+i)%len(ks.keys)]); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	if err := calls(max(2000, 4*r.callers)); err != nil {
		return err
	}
	return calls(r.n)
}

// TestMain runs an instance of BenchmarkHotKeyBinding when bindingRunEnv
// is set, the client process of BenchmarkClientInstructions when
// clientRunEnv is, and the tests otherwise.
func TestMain(m *testing.M) {
	if s := os.Getenv(bindingRunEnv); s != "" {
		if err := runBinding(s); err != nil {
			fmt.Fprintf(os.Stderr, "binding run %q: %v\n", s, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if s := os.Getenv(clientRunEnv); s != "" {
		r, err := parseClientRun(s)
		if err == nil {
			err = r.run()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "client run %q: %v\n", s, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
