package redislimit

// The failover fault suite: whether admissions survive a Sentinel
// failover, measured from what callers were told.
//
// Each scenario runs on a fresh Sentinel setup (a master, two replicas,
// three sentinels) with three app instances in processes of their own
// (this test binary started again with failoverInstanceEnv set), each with
// a FailoverClient, FailClosed, deciding on a few hot keys per algorithm
// at well over ten times Max per window and logging every admission with
// its invoke and complete times. Replica 1 replicates through a
// StreamProxy and has the lowest replica-priority, so the sentinels
// promote it. With its stream held the instances switch to fresh keys,
// whose admissions the held replica never receives; then the fault:
//
//	kill     the master is killed (SIGKILL) with replica 1's stream held;
//	stop     the master is frozen (SIGSTOP) with replica 1's stream held
//	         until the sentinels have promoted replica 1, then continued;
//	restart  replica 1 is killed and restarted empty (no persistence),
//	         unable to sync through the held proxy, then the master is
//	         killed;
//	failover SENTINEL FAILOVER with nothing held: the control. Sentinel
//	         does not pause the old master's clients, so what it admits
//	         between the promotion and its demotion is lost: a few
//	         admissions on a loaded machine, none usually. It is reported,
//	         not required, in the negative controls.
//
// From the fault on, and after the failover, the instances decide on the
// first of the fresh keys only, and the others keep what was admitted
// before the fault. The checks (failovercheck_test.go) then count over-admissions (a span
// that holds more than the limit allows) and lost admissions (a Peek on
// the winning master that does not count every admission a caller was
// told of). Each scenario runs in each of failoverModes. Off and "one"
// (withDurableReplicas(1), acknowledgement from one replica of two) are
// negative controls, in which the held-stream scenarios must find
// over-admissions and lost admissions, or the suite proves nothing; "on"
// (WithDurable) must find none in any scenario. In restart the promoted
// replica has synced nothing since its restart, so it has forgotten even
// what it had acknowledged before: the hot keys' admissions, which no
// acknowledgement can keep. Those losses are reported apart and not
// required to be none.
//
// A seed drives the schedule (keys, how many decisions are made before
// the fault, the instances' pacing); it is printed on failure, and
// -failover.seed=N repeats it. The short schedule, in every go test run,
// runs each scenario once in each mode. -failover.long runs
// failoverLongRounds rounds, each with a seed of its own:
//
//	go test -run TestFailoverSuite -failover.long ./runtime/redislimit/

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

var (
	failoverLong = flag.Bool("failover.long", false, "run the failover suite's long schedule")
	failoverSeed = flag.Uint64("failover.seed", 47, "the failover suite's seed")
)

// failoverLongRounds is how many rounds the long schedule runs.
const failoverLongRounds = 5

// failoverInstanceEnv holds the JSON failoverInstanceConfig of an app
// instance.
const failoverInstanceEnv = "REDISLIMIT_TEST_FAILOVER_INSTANCE"

func init() {
	if cfg := os.Getenv(failoverInstanceEnv); cfg != "" {
		os.Exit(runFailoverInstance(cfg))
	}
}

// The suite's limits: one per algorithm, all Max per failoverWindow. The
// window is long enough that a fault's admissions and those after the
// failover fall in one window, however long the sentinels take.
const (
	failoverWindow = time.Minute
	failoverMax    = 20
	// failoverHotKeys is how many keys per limit an instance decides on.
	failoverHotKeys = 2
	// failoverDurableWait is WithDurable's wait in mode on.
	failoverDurableWait = 200 * time.Millisecond
)

// failoverLimits returns the suite's limits, in the order admissions
// name them.
func failoverLimits() []runtime.Limit {
	var ls []runtime.Limit
	for _, alg := range runtime.Algorithms() {
		ls = append(ls, runtime.Limit{Name: "failover." + string(alg), Window: failoverWindow, Max: failoverMax, Algorithm: alg})
	}
	return ls
}

// failoverKey is key i of phase p: phase 0 decides on the hot keys, phase
// 1 (the fault, with the stream held) on fresh ones, and phase 2 (from the
// fault on) on the first of those only, so the others keep just what was
// admitted before the fault, for the durability check.
func failoverKey(tag string, p, i int) string {
	if p == 2 {
		p, i = 1, 0
	}
	return fmt.Sprintf("%s-p%d-k%d", tag, p, i)
}

// failoverInstanceConfig is what one app instance decides, and how.
type failoverInstanceConfig struct {
	ID          int
	MasterName  string
	Sentinels   []string
	Tag         string // of the keys
	Goroutines  int
	Pace        time.Duration // a goroutine's pause between decisions
	Mode        string
	Seed        uint64
	DurableWait time.Duration
}

// failoverLine is one line an instance writes: an admission, or (P set)
// its progress, or (Done set) its last.
type failoverLine struct {
	failoverAdmission
	P    *int  `json:"p,omitempty"`
	OK   int64 `json:"ok,omitempty"` // decisions of phase P that Redis made
	All  int64 `json:"n,omitempty"`  // decisions of phase P
	Sum  int64 `json:"t,omitempty"`  // decisions of every phase
	Done bool  `json:"done,omitempty"`
}

// failoverPhases bounds the phases an instance counts.
const failoverPhases = 3

// runFailoverInstance is the app instance program; it returns the exit
// code. After "go" it reads "phase N" lines, each switching its keys to
// phase N's, until its stdin closes.
func runFailoverInstance(cfgJSON string) int {
	var cfg failoverInstanceConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "failover instance: bad %s: %v\n", failoverInstanceEnv, err)
		return 2
	}
	client := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: cfg.MasterName, SentinelAddrs: cfg.Sentinels})
	defer client.Close()
	if err := client.Ping(context.Background()).Err(); err != nil {
		fmt.Fprintf(os.Stderr, "failover instance: PING: %v\n", err)
		return 2
	}
	// No deny cache: after a failover it would go on denying the keys it
	// saw denied, hiding for a while what the promoted master forgot from
	// this instance, though not from an instance that had not seen them
	// denied. The suite measures what Redis keeps.
	opts := []Option{WithFailurePolicy(FailClosed), WithDenyCache(0)}
	switch cfg.Mode {
	case "on":
		opts = append(opts, WithDurable(cfg.DurableWait))
	case "one":
		opts = append(opts, WithDurable(cfg.DurableWait), withDurableReplicas(1))
	}
	lim := New(client, opts...)
	limits := failoverLimits()

	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		fmt.Fprintf(os.Stderr, "failover instance: expected go on stdin, got %q\n", in.Text())
		return 2
	}
	var (
		phase   atomic.Int64
		ok, all [failoverPhases]atomic.Int64
		seq     atomic.Int64
		out     sync.Mutex
		wg      sync.WaitGroup
		stop    = make(chan struct{})
	)
	write := func(l failoverLine) {
		b, _ := json.Marshal(l)
		out.Lock()
		defer out.Unlock()
		// Unbuffered: a line written is a line the parent has.
		_, _ = os.Stdout.Write(append(b, '\n'))
	}
	for g := range cfg.Goroutines {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID*1000+g)))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := int(phase.Load())
				li, ki := rng.IntN(len(limits)), rng.IntN(failoverHotKeys)
				key := failoverKey(cfg.Tag, p, ki)
				invoke := time.Now()
				ds, err := lim.Decide(context.Background(), runtime.Request{Limit: limits[li], Key: key})
				complete := time.Now()
				all[p].Add(1)
				if err == nil && ds.Source == runtime.SourceStore {
					ok[p].Add(1)
					if ds.Allowed {
						id := int64(cfg.ID)<<40 | seq.Add(1)
						write(failoverLine{failoverAdmission: failoverAdmission{
							ID: id, Limit: li, Key: key, Invoke: invoke.UnixNano(), Complete: complete.UnixNano(),
						}})
					}
				}
				time.Sleep(cfg.Pace/2 + time.Duration(rng.Int64N(int64(cfg.Pace))))
			}
		})
	}
	progress := func() {
		p := int(phase.Load())
		var sum int64
		for i := range all {
			sum += all[i].Load()
		}
		write(failoverLine{P: &p, OK: ok[p].Load(), All: all[p].Load(), Sum: sum})
	}
	reportEvery(&wg, stop, 20*time.Millisecond, progress)
	for in.Scan() {
		var p int
		if _, err := fmt.Sscanf(in.Text(), "phase %d", &p); err != nil || p < 0 || p >= failoverPhases {
			fmt.Fprintf(os.Stderr, "failover instance: bad line %q\n", in.Text())
			return 2
		}
		phase.Store(int64(p))
		progress()
	}
	close(stop)
	wg.Wait()
	write(failoverLine{Done: true})
	return 0
}

// failoverInstance is a running app instance, seen from the test.
type failoverInstance struct {
	*instance
	mu         sync.Mutex
	admissions []failoverAdmission
	phase      int
	ok, all    int64 // of phase
	sum        int64 // of every phase
	finished   bool  // its last line read
	bad        []string
	drained    chan struct{}
}

// read takes the instance's lines until it exits.
func (fi *failoverInstance) read() {
	defer close(fi.drained)
	for line := range fi.lines {
		var l failoverLine
		err := json.Unmarshal([]byte(line), &l)
		fi.mu.Lock()
		switch {
		case err != nil:
			fi.bad = append(fi.bad, line)
		case l.Done:
			fi.finished = true
		case l.P != nil:
			fi.phase, fi.ok, fi.all, fi.sum = *l.P, l.OK, l.All, l.Sum
		default:
			fi.admissions = append(fi.admissions, l.failoverAdmission)
		}
		fi.mu.Unlock()
	}
}

// progress returns the instance's phase and its counts there.
func (fi *failoverInstance) progress() (phase int, ok, all int64) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return fi.phase, fi.ok, fi.all
}

// failoverScenario is one fault.
type failoverScenario string

const (
	scenarioKill     failoverScenario = "kill"
	scenarioStop     failoverScenario = "stop"
	scenarioRestart  failoverScenario = "restart"
	scenarioFailover failoverScenario = "failover"
)

// failoverModes are the modes every scenario runs in.
var failoverModes = []string{"off", "one"}

// failoverResult is what one run of a scenario found.
type failoverResult struct {
	admissions int
	decisions  int64
	over       int // admissions beyond what the limits allow, over all keys
	keysOver   int
	worst      int // the most one key went over
	lost       int // admissions on the fault's keys the promoted master does not count
	lostHot    int // the same on the hot keys, admitted before the fault
	perLimit   []string
}

// Bounds for waiting on the instances; they only decide when to give up.
const (
	failoverProgressBound = 60 * time.Second
	failoverInstances     = 3
)

// runFailoverScenario runs sc in mode on a fresh setup and returns what
// the checks found.
func runFailoverScenario(t *testing.T, sc failoverScenario, mode string, seed uint64) failoverResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	s := redistest.StartSentinelWith(t,
		redistest.WithReplicas(2),
		// The sentinels prefer the replica of lowest priority, whatever its
		// offset: the held one.
		redistest.WithServerOptionsAt(1, redistest.WithArgs("--replica-priority", "10")),
		// Long enough that the sentinels leave replica 1 behind its proxy.
		redistest.WithFailoverTimeout(30*time.Second),
	)
	servers := s.Servers()
	master, held := servers[0], servers[1]
	proxy := s.ReplicateThrough(t, held)

	tag := fmt.Sprintf("s%x", rng.Uint32())
	limits := failoverLimits()
	var ins []*failoverInstance
	for i := range failoverInstances {
		cfg := failoverInstanceConfig{
			ID: i, MasterName: s.MasterName(), Sentinels: s.SentinelAddrs(), Tag: tag,
			Goroutines: 4, Pace: time.Duration(2+rng.IntN(4)) * time.Millisecond,
			Mode: mode, Seed: seed, DurableWait: failoverDurableWait,
		}
		fi := &failoverInstance{instance: startProgram(t, failoverInstanceEnv, cfg), drained: make(chan struct{})}
		go fi.read()
		ins = append(ins, fi)
	}
	for _, fi := range ins {
		fi.start(t)
	}
	tell := func(line string) {
		for _, fi := range ins {
			_, err := io.WriteString(fi.stdin, line+"\n")
			require.NoError(t, err)
		}
	}
	// awaitDecisions waits until every instance has made n more decisions
	// of phase p than base[i], answered by Redis if ok; it gives up quietly
	// after failoverProgressBound, for a mode that keeps denying.
	awaitDecisions := func(p int, base []int64, n int64, ok bool) []int64 {
		deadline := time.Now().Add(failoverProgressBound)
		got := make([]int64, len(ins))
		for {
			done := true
			for i, fi := range ins {
				ph, o, a := fi.progress()
				if ph != p {
					done = false
					continue
				}
				got[i] = a
				if ok {
					got[i] = o
				}
				if got[i]-base[i] < n {
					done = false
				}
			}
			if done {
				return got
			}
			if time.Now().After(deadline) {
				t.Logf("instances did not make %d more decisions (Redis-answered: %v) of phase %d within %v: %v", n, ok, p, failoverProgressBound, got)
				return got
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	zero := make([]int64, len(ins))

	// Warm the hot keys up to ten times Max per key per window.
	awaitDecisions(0, zero, int64(10*failoverMax*len(limits)*failoverHotKeys/failoverInstances), false)
	// The fault's admissions and those after it should share a fixed
	// window, which starts on the epoch's multiples of the window: a
	// failover takes seconds, so a quarter of the window is room enough.
	for time.Now().UnixNano()%failoverWindow.Nanoseconds() > (failoverWindow * 3 / 4).Nanoseconds() {
		time.Sleep(50 * time.Millisecond)
	}

	before := int64(10 + rng.IntN(30))
	switch sc {
	case scenarioKill, scenarioStop:
		proxy.Hold()
	case scenarioRestart:
		held.Stop(t)
		proxy.Hold()
		held.Start(t)
	}
	tell("phase 1")
	awaitDecisions(1, zero, before, false)
	tell("phase 2")
	awaitDecisions(2, zero, 1, false)
	var promoted *redistest.Server
	switch sc {
	case scenarioKill, scenarioRestart:
		master.Stop(t)
		promoted = s.Master(t)
	case scenarioStop:
		master.Pause(t)
		promoted = s.Master(t)
		master.Resume(t)
	case scenarioFailover:
		promoted = s.Failover(t)
	}
	if sc != scenarioFailover {
		require.Equal(t, held, promoted, "the sentinels must promote the held replica, of lowest priority")
	}
	// Decisions go on, on the first of the fault's keys, at the promoted
	// master, until each could have been admitted twice Max.
	awaitDecisions(2, awaitDecisions(2, zero, 0, true), int64(2*failoverMax*len(limits)/failoverInstances), true)

	for _, fi := range ins {
		require.NoError(t, fi.stdin.Close())
	}
	var adms []failoverAdmission
	for _, fi := range ins {
		select {
		case <-fi.drained:
		case <-time.After(instanceReportBound):
			t.Fatalf("failover instance %d did not finish\nstderr:\n%s", fi.cmd.Process.Pid, fi.stderr.String())
		}
		<-fi.done
		require.NoError(t, fi.err, "stderr:\n%s", fi.stderr.String())
		require.True(t, fi.finished, "the instance must write its last line")
		require.Empty(t, fi.bad, "lines the test could not parse")
		adms = append(adms, fi.admissions...)
	}

	res := failoverResult{admissions: len(adms)}
	for _, fi := range ins {
		fi.mu.Lock()
		res.decisions += fi.sum
		fi.mu.Unlock()
	}
	byKey := map[[2]string][]failoverAdmission{}
	for _, a := range adms {
		k := [2]string{limits[a.Limit].Name, a.Key}
		byKey[k] = append(byKey[k], a)
	}
	peeker := New(promoted.Client(t))
	for li, l := range limits {
		var over, keysOver, n int
		var lost [2]int
		for p := range 2 {
			for ki := range failoverHotKeys {
				key := failoverKey(tag, p, ki)
				ka := byKey[[2]string{l.Name, key}]
				n += len(ka)
				if o := overAdmissions(l, ka); o > 0 {
					over += o
					keysOver++
					res.worst = max(res.worst, o)
				}
				invoke := time.Now()
				ds, err := peeker.Peek(context.Background(), runtime.Request{Limit: l, Key: key})
				complete := time.Now()
				require.NoError(t, err, "Peek on the promoted master")
				lost[p] += lostAdmissions(l, ka, ds.Each[0].Remaining, invoke.UnixNano(), complete.UnixNano())
			}
		}
		res.over += over
		res.keysOver += keysOver
		res.lost += lost[1]
		res.lostHot += lost[0]
		res.perLimit = append(res.perLimit, fmt.Sprintf("%s: %d admissions, %d over on %d keys, %d lost (and %d on the hot keys)",
			limits[li].Algorithm, n, over, keysOver, lost[1], lost[0]))
	}
	t.Logf("%s, mode %s, seed %d: %d decisions, %d admissions; over-admissions %d on %d keys (worst key +%d); lost %d on the fault's keys, %d on the hot keys; proxy dropped %d bytes\n  %s",
		sc, mode, seed, res.decisions, res.admissions, res.over, res.keysOver, res.worst, res.lost, res.lostHot, proxy.Dropped(), strings.Join(res.perLimit, "\n  "))
	return res
}

// TestFailoverSuite runs the schedule: every scenario in every mode, on a
// fresh setup each (see the file's comment).
func TestFailoverSuite(t *testing.T) {
	rounds := 1
	if *failoverLong {
		rounds = failoverLongRounds
	}
	seeds := rand.New(rand.NewPCG(*failoverSeed, 1))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failover suite seed: %d (rerun with -failover.seed=%d)", *failoverSeed, *failoverSeed)
		}
	})
	for round := range rounds {
		for _, sc := range []failoverScenario{scenarioKill, scenarioStop, scenarioRestart, scenarioFailover} {
			for _, mode := range failoverModes {
				seed := seeds.Uint64()
				t.Run(fmt.Sprintf("%d/%s/%s", round, sc, mode), func(t *testing.T) {
					t.Cleanup(func() {
						if t.Failed() {
							t.Logf("scenario seed %d, from -failover.seed=%d", seed, *failoverSeed)
						}
					})
					res := runFailoverScenario(t, sc, mode, seed)
					switch {
					case mode == "on":
						require.Zero(t, res.over, "over-admissions with WithDurable")
						require.Zero(t, res.lost, "admissions lost with WithDurable")
						if sc != scenarioRestart {
							// A replica restarted empty forgets what it had
							// acknowledged; promoted before it has synced, it
							// loses the hot keys' admissions, durable or not.
							require.Zero(t, res.lostHot, "hot-key admissions lost with WithDurable")
						}
					case sc == scenarioFailover:
						// The control loses no more than what the old
						// master admits between promotion and demotion.
					default:
						require.Positive(t, res.over, "the negative control must find over-admissions, or the checks prove nothing")
						require.Positive(t, res.lost, "the negative control must find lost admissions")
					}
				})
			}
		}
	}
}
