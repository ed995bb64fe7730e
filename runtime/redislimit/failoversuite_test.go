package redislimit

// The failover fault suite: whether admissions survive a failover, on
// Sentinel and on a Cluster, measured from what callers were told.
//
// Each Sentinel scenario runs on a fresh setup (a master, two replicas,
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
//	cluster  on a Cluster of three masters with two replicas each, one
//	         replica of the fault keys' master is frozen and cut off, the
//	         master and the other replica killed, and the frozen one
//	         continued and elected (see runClusterScenario).
//
// Once a replica is promoted, the old master comes back (restarted empty
// if it was killed; on the Cluster, the killed replica too) as a replica
// of the new one, so that the new master has two replicas again. From the fault on the instances
// decide on the first of the fresh keys and the first hot key only, and
// the other keys keep what was admitted before the fault. The checks
// (failovercheck_test.go) then count over-admissions (a span that holds
// more than the limit allows) and lost admissions (a Peek on the winning
// master that does not count every admission a caller was told of), on the
// fresh keys and on the hot keys apart.
//
// Modes: off and "one" (withDurableReplicas(1), acknowledgement from one
// replica of two) are negative controls, in which every scenario but the
// control must find over-admissions and lost admissions, or the suite
// proves nothing. With "on" (WithDurable) no scenario may over-admit
// or lose an admission, and decisions must admit again after the
// failover. In restart, though, the promoted replica has synced nothing
// since its restart, so it has forgotten even what it had acknowledged
// before: the hot keys' admissions, which no acknowledgement can keep.
// Those are reported and not required to be none.
//
// A seed drives the schedule (keys, how many decisions are made before
// the fault, the instances' pacing); it is printed on failure, and
// -failover.seed=N repeats it. The short schedule, in every go test run,
// runs every scenario with WithDurable and a negative control for each way
// of losing writes (see failoverShort); -failover.long runs every scenario
// in every mode, failoverLongRounds times, each run with a seed of its own:
//
//	go test ./runtime/redislimit/ -run TestFailoverSuite -failover.long

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
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
// fault on) on the first of each, so the others keep just what was
// admitted before, for the durability check.
func failoverKey(tag string, p, i int) string {
	if p == 2 {
		p, i = 1-i, 0
	}
	return fmt.Sprintf("%s-p%d-k%d", tag, p, i)
}

// failoverInstanceConfig is what one app instance decides, and how.
type failoverInstanceConfig struct {
	ID          int
	MasterName  string
	Sentinels   []string
	Cluster     []string // a Cluster's addresses, in place of the sentinels
	Tag         string   // of the keys
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
	var client redis.UniversalClient
	if len(cfg.Cluster) > 0 {
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.Cluster})
	} else {
		client = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: cfg.MasterName, SentinelAddrs: cfg.Sentinels})
	}
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
	scenarioCluster  failoverScenario = "cluster"
)

// failoverModes are the modes every scenario runs in.
var failoverModes = []string{"off", "one", "on"}

// failoverResult is what one run of a scenario found.
type failoverResult struct {
	admissions int
	decisions  int64
	after      int // admissions invoked once the failover was done
	over       int // admissions beyond what the limits allow, on the fault's keys
	overHot    int // the same on the hot keys
	keysOver   int
	worst      int // the most one key went over
	lost       int // admissions on the fault's keys the promoted master does not count
	lostHot    int // the same on the hot keys
	perLimit   []string
}

// Bounds for waiting on the instances; they only decide when to give up.
const (
	failoverProgressBound = 60 * time.Second
	failoverInstances     = 3
)

// failoverApps are a run's app instances, seen from the test.
type failoverApps struct {
	t   *testing.T
	ins []*failoverInstance
}

// startFailoverApps starts failoverInstances app instances deciding per
// cfg (ID and Pace set here, from rng) and lets them go.
func startFailoverApps(t *testing.T, cfg failoverInstanceConfig, rng *rand.Rand) *failoverApps {
	t.Helper()
	apps := &failoverApps{t: t}
	for i := range failoverInstances {
		cfg.ID, cfg.Pace = i, time.Duration(2+rng.IntN(4))*time.Millisecond
		fi := &failoverInstance{instance: startProgram(t, failoverInstanceEnv, cfg), drained: make(chan struct{})}
		go fi.read()
		apps.ins = append(apps.ins, fi)
	}
	for _, fi := range apps.ins {
		fi.start(t)
	}
	return apps
}

// tell writes line to every instance.
func (a *failoverApps) tell(line string) {
	for _, fi := range a.ins {
		_, err := io.WriteString(fi.stdin, line+"\n")
		require.NoError(a.t, err)
	}
}

// await waits until every instance has made n more decisions of phase p
// than base[i] (nil: none), counting only those Redis made if ok, and
// returns its counts; it gives up quietly after failoverProgressBound, for
// a mode that keeps denying.
func (a *failoverApps) await(p int, base []int64, n int64, ok bool) []int64 {
	deadline := time.Now().Add(failoverProgressBound)
	got := make([]int64, len(a.ins))
	for {
		done := true
		for i, fi := range a.ins {
			ph, o, all := fi.progress()
			if ph != p {
				done = false
				continue
			}
			got[i] = all
			if ok {
				got[i] = o
			}
			var b int64
			if base != nil {
				b = base[i]
			}
			if got[i]-b < n {
				done = false
			}
		}
		if done {
			return got
		}
		if time.Now().After(deadline) {
			a.t.Logf("instances did not make %d more decisions (made by Redis: %v) of phase %d within %v: %v", n, ok, p, failoverProgressBound, got)
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// warm waits until the hot keys have seen ten times Max decisions each,
// then until the current fixed window has a quarter of it left at least,
// so that a fault's admissions and those after it share one: a failover
// takes seconds.
func (a *failoverApps) warm() {
	a.await(0, nil, int64(10*failoverMax*len(failoverLimits())*failoverHotKeys/failoverInstances), false)
	for time.Now().UnixNano()%failoverWindow.Nanoseconds() > (failoverWindow * 3 / 4).Nanoseconds() {
		time.Sleep(50 * time.Millisecond)
	}
}

// finish stops the instances and returns their admissions and how many
// decisions they made.
func (a *failoverApps) finish() ([]failoverAdmission, int64) {
	t := a.t
	for _, fi := range a.ins {
		require.NoError(t, fi.stdin.Close())
	}
	var adms []failoverAdmission
	var decisions int64
	for _, fi := range a.ins {
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
		decisions += fi.sum
	}
	return adms, decisions
}

// runFailoverScenario runs sc in mode on a fresh Sentinel setup and
// returns what the checks found.
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
	apps := startFailoverApps(t, failoverInstanceConfig{
		MasterName: s.MasterName(), Sentinels: s.SentinelAddrs(), Tag: tag,
		Goroutines: 4, Mode: mode, Seed: seed, DurableWait: failoverDurableWait,
	}, rng)
	apps.warm()

	switch sc {
	case scenarioKill, scenarioStop:
		proxy.Hold()
	case scenarioRestart:
		held.Stop(t)
		proxy.Hold()
		held.Start(t)
	}
	apps.tell("phase 1")
	apps.await(1, nil, int64(10+rng.IntN(30)), false)
	apps.tell("phase 2")
	apps.await(2, nil, 1, false)
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
	failedOver := time.Now().UnixNano()
	// The old master comes back, empty if it was killed, as a replica of the
	// promoted one: with two replicas again, WithDurable can admit again.
	if !master.Running() {
		master.Start(t)
	}
	s.Replicas(t)
	// Decisions go on, on the first of the fault's keys and of the hot
	// keys, until each could have been admitted twice Max.
	apps.await(2, apps.await(2, nil, 0, true), int64(2*failoverMax*len(failoverLimits())/failoverInstances), true)

	adms, decisions := apps.finish()
	res := auditFailover(t, adms, tag, New(promoted.Client(t)), failedOver)
	res.decisions = decisions
	t.Logf("%s, mode %s, seed %d: %s; proxy dropped %d bytes", sc, mode, seed, res, proxy.Dropped())
	return res
}

// runClusterScenario runs the cluster scenario in mode on a fresh Cluster
// of three masters with two replicas each: the fault's keys are all on
// one master M, with replicas R and R2. R is frozen (SIGSTOP) and its
// replication connection closed, so it receives and acknowledges nothing,
// while the instances decide on the fault's keys; then M and R2 are killed
// and R continued, and R, the only replica left, is elected in M's place,
// without what was admitted while it was frozen. M and R2 then come back,
// empty, as R's replicas.
func runClusterScenario(t *testing.T, mode string, seed uint64) failoverResult {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0))
	c := redistest.StartClusterWith(t, 2)
	cc := c.Client(t)
	keys := New(cc)
	limit := failoverLimits()[0]
	// A tag whose fault keys share a master; a key's slot is its user
	// key's alone, whatever the limit (see storageKey).
	var tag string
	var m *redistest.Server
	for {
		tag = fmt.Sprintf("c%x", rng.Uint32())
		m = c.MasterFor(t, keys.storageKey(limit, failoverKey(tag, 1, 0)))
		if c.MasterFor(t, keys.storageKey(limit, failoverKey(tag, 1, 1))) == m {
			break
		}
	}
	replicas := c.ReplicasOf(t, m)
	require.Len(t, replicas, 2)
	frozen, other := replicas[0], replicas[1]

	apps := startFailoverApps(t, failoverInstanceConfig{
		Cluster: c.Addrs(), Tag: tag,
		Goroutines: 4, Mode: mode, Seed: seed, DurableWait: failoverDurableWait,
	}, rng)
	apps.warm()

	// A frozen process's kernel still takes in what its master sends, and
	// the process applies it once continued: the replication connection
	// is closed on the master's side too, so nothing more reaches it.
	link := masterLink(t, frozen)
	frozen.Pause(t)
	require.NoError(t, m.Client(t).Do(context.Background(), "CLIENT", "KILL", "ADDR", link).Err(),
		"closing %s's replication connection on %s", frozen, m)
	apps.tell("phase 1")
	apps.await(1, nil, int64(10+rng.IntN(30)), false)
	apps.tell("phase 2")
	apps.await(2, nil, 1, false)
	m.Stop(t)
	other.Stop(t)
	frozen.Resume(t)
	require.Eventually(t, func() bool { return slices.Contains(c.Masters(), frozen) }, failoverProgressBound, 20*time.Millisecond,
		"the frozen replica, the only one left, must be elected in place of its master")
	failedOver := time.Now().UnixNano()
	m.Start(t)
	other.Start(t)
	c.AwaitHealthy(t)
	require.Len(t, c.ReplicasOf(t, frozen), 2, "the killed nodes rejoin as the promoted replica's replicas")
	apps.await(2, apps.await(2, nil, 0, true), int64(2*failoverMax*len(failoverLimits())/failoverInstances), true)

	adms, decisions := apps.finish()
	res := auditFailover(t, adms, tag, keys, failedOver)
	res.decisions = decisions
	t.Logf("cluster, mode %s, seed %d: %s", mode, seed, res)
	return res
}

// masterLink returns the address, as its master sees it, of replica's
// replication connection: the laddr of its master client.
func masterLink(t *testing.T, replica *redistest.Server) string {
	t.Helper()
	list, err := replica.Client(t).Do(context.Background(), "CLIENT", "LIST", "TYPE", "master").Text()
	require.NoError(t, err)
	for _, f := range strings.Fields(list) {
		if v, ok := strings.CutPrefix(f, "laddr="); ok {
			return v
		}
	}
	t.Fatalf("%s reports no master connection: %q", replica, list)
	return ""
}

// auditFailover checks the admissions of a run whose keys are tag's,
// with peeker's Peek for the durability check; failedOver is when the
// failover was done.
func auditFailover(t *testing.T, adms []failoverAdmission, tag string, peeker *Limiter, failedOver int64) failoverResult {
	t.Helper()
	limits := failoverLimits()
	res := failoverResult{admissions: len(adms)}
	byKey := map[[2]string][]failoverAdmission{}
	for _, a := range adms {
		k := [2]string{limits[a.Limit].Name, a.Key}
		byKey[k] = append(byKey[k], a)
		if a.Invoke > failedOver {
			res.after++
		}
	}
	for _, l := range limits {
		// By key class: 0 the hot keys, 1 the fault's.
		var over, keysOver, lost [2]int
		n := 0
		for p := range 2 {
			for ki := range failoverHotKeys {
				key := failoverKey(tag, p, ki)
				ka := byKey[[2]string{l.Name, key}]
				n += len(ka)
				if o := overAdmissions(l, ka); o > 0 {
					over[p] += o
					keysOver[p]++
					res.worst = max(res.worst, o)
				}
				invoke := time.Now()
				ds, err := peeker.Peek(context.Background(), runtime.Request{Limit: l, Key: key})
				complete := time.Now()
				require.NoError(t, err, "Peek on the promoted master")
				lost[p] += lostAdmissions(l, ka, ds.Each[0].Remaining, invoke.UnixNano(), complete.UnixNano())
			}
		}
		res.over, res.overHot = res.over+over[1], res.overHot+over[0]
		res.keysOver += keysOver[0] + keysOver[1]
		res.lost, res.lostHot = res.lost+lost[1], res.lostHot+lost[0]
		res.perLimit = append(res.perLimit, fmt.Sprintf("%s: %d admissions; over %d on %d fault keys, %d on %d hot keys; lost %d on fault keys, %d on hot keys",
			l.Algorithm, n, over[1], keysOver[1], over[0], keysOver[0], lost[1], lost[0]))
	}
	return res
}

// String reports the result for the log.
func (r failoverResult) String() string {
	return fmt.Sprintf("%d decisions, %d admissions (%d invoked after the failover); over-admissions %d on the fault's keys, %d on the hot keys, over %d keys in all (worst key +%d); lost %d on the fault's keys, %d on the hot keys\n  %s",
		r.decisions, r.admissions, r.after, r.over, r.overHot, r.keysOver, r.worst, r.lost, r.lostHot, strings.Join(r.perLimit, "\n  "))
}

// failoverRun is one scenario in one mode.
type failoverRun struct {
	sc   failoverScenario
	mode string
}

// failoverShort is the short schedule: every scenario with WithDurable,
// and a negative control for each way of losing writes (a held stream in
// either mode, a replica restarted empty, a Cluster replica cut off).
var failoverShort = []failoverRun{
	{scenarioKill, "off"}, {scenarioKill, "one"}, {scenarioKill, "on"},
	{scenarioStop, "on"},
	{scenarioRestart, "off"}, {scenarioRestart, "on"},
	{scenarioFailover, "on"},
	{scenarioCluster, "one"}, {scenarioCluster, "on"},
}

// failoverSchedule returns the runs of one round: the short schedule, or
// every scenario in every mode.
func failoverSchedule(long bool) []failoverRun {
	if !long {
		return failoverShort
	}
	var runs []failoverRun
	for _, sc := range []failoverScenario{scenarioKill, scenarioStop, scenarioRestart, scenarioFailover, scenarioCluster} {
		for _, mode := range failoverModes {
			runs = append(runs, failoverRun{sc, mode})
		}
	}
	return runs
}

// TestFailoverSuite runs the schedule, each run on a fresh setup (see the
// file's comment).
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
		for _, run := range failoverSchedule(*failoverLong) {
			sc, mode := run.sc, run.mode
			seed := seeds.Uint64()
			t.Run(fmt.Sprintf("%d/%s/%s", round, sc, mode), func(t *testing.T) {
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("scenario seed %d, from -failover.seed=%d", seed, *failoverSeed)
					}
				})
				var res failoverResult
				if sc == scenarioCluster {
					res = runClusterScenario(t, mode, seed)
				} else {
					res = runFailoverScenario(t, sc, mode, seed)
				}
				switch {
				case mode == "on":
					require.Zero(t, res.over, "over-admissions with WithDurable")
					require.Zero(t, res.lost, "admissions lost with WithDurable")
					require.Positive(t, res.after, "WithDurable must admit again once the promoted master has two replicas")
					if sc != scenarioRestart {
						// A replica restarted empty forgets what it had
						// acknowledged; promoted before it has synced, it
						// loses the hot keys' admissions, durable or not.
						require.Zero(t, res.overHot, "over-admissions on the hot keys with WithDurable")
						require.Zero(t, res.lostHot, "hot-key admissions lost with WithDurable")
					}
				case sc == scenarioFailover:
					// The control loses no more than what the old master
					// admits between promotion and demotion.
				default:
					require.Positive(t, res.over, "the negative control must find over-admissions, or the checks prove nothing")
					require.Positive(t, res.lost, "the negative control must find lost admissions")
				}
			})
		}
	}
}
