package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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

// The concurrency audit runs callers in processes of their own: this test
// binary started again with concInstanceEnv set, which init sees (as the
// permit holders of permitprocess_test.go). An instance connects and
// writes "ready"; once it reads "go" its goroutines hold permits of its
// limit on its keys, one call at a time each, until its stdin closes. For
// each call admitted it writes, once the call has been settled,
//
//	h key start end alive lostAt settled known
//
// start and end in µs on Redis's clock (TIME): start read once runtime.Admit
// had returned (0 if the call's context had ended by then), end read before
// the release was sent; alive says whether the call's context (runtime.Keep's)
// was still live once end had been read, lostAt is when (TIME read once it
// saw it) the call learned its permit was lost, or 0, settled is "ok",
// "lost" or "error", and known says whether the call's HeldUntil was still
// ahead once end had been read (to explain a failure; not audited). Every
// concProgressEvery it writes "p acquisitions denials lost errors", and
// it ends with "done" and the same counts.

// concInstanceEnv holds the JSON concInstanceConfig of an instance.
const concInstanceEnv = "REDISLIMIT_TEST_CONC_INSTANCE"

// concProgressEvery is how often an instance reports its counts.
const concProgressEvery = 10 * time.Millisecond

func init() {
	if cfg := os.Getenv(concInstanceEnv); cfg != "" {
		os.Exit(runConcInstance(cfg))
	}
}

// concInstanceConfig is what one instance holds, and how.
type concInstanceConfig struct {
	Addr  string
	Limit runtime.Limit
	Keys  []string
	// Goroutines call at once, each holding a permit for a random time in
	// [HoldMin, HoldMax) before releasing it.
	Goroutines       int
	HoldMin, HoldMax time.Duration
}

// runConcInstance is the instance program; it returns the exit code.
func runConcInstance(cfgJSON string) int {
	var cfg concInstanceConfig
	client, ok := instanceClient("concurrency instance", concInstanceEnv, cfgJSON, &cfg, func() string { return cfg.Addr })
	if !ok {
		return 2
	}
	defer client.Close()
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	stop, ok := awaitGo("concurrency instance")
	if !ok {
		return 2
	}
	var (
		out                            sync.Mutex
		acquired, denied, lost, failed atomic.Int64
		wg                             sync.WaitGroup
	)
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		// Unbuffered: a line written is a line the parent has.
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	// redisNow reads Redis's clock, in µs; 0 when it cannot.
	redisNow := func() int64 {
		now, err := client.Time(context.Background()).Result()
		if err != nil {
			failed.Add(1)
			return 0
		}
		return now.UnixMicro()
	}
	counts := func() string {
		return fmt.Sprintf("%d %d %d %d", acquired.Load(), denied.Load(), lost.Load(), failed.Load())
	}
	for g := range cfg.Goroutines {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := cfg.Keys[(g+i)%len(cfg.Keys)]
				h, err := runtime.Admit(context.Background(), lim, runtime.Request{Limit: cfg.Limit, Key: key})
				if errors.Is(err, runtime.ErrLimited) {
					denied.Add(1)
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
					continue
				}
				if err != nil {
					failed.Add(1)
					time.Sleep(time.Millisecond)
					continue
				}
				acquired.Add(1)
				run, stopKeep := runtime.Keep(context.Background(), h)
				start := redisNow()
				// The call was live at start unless its context says
				// otherwise now.
				if run.Err() != nil {
					start = 0
				}
				var lostAt int64
				timer := time.NewTimer(cfg.HoldMin + rand.N(cfg.HoldMax-cfg.HoldMin))
				select {
				case <-timer.C:
				case <-run.Done():
					timer.Stop()
				}
				end := redisNow()
				alive := run.Err() == nil
				known := time.Now().Before(h.(runtime.PermitHold).HeldUntil())
				if errors.Is(context.Cause(run), runtime.ErrPermitLost) {
					lostAt = redisNow()
					lost.Add(1)
				}
				stopKeep()
				settled := "ok"
				switch err := h.Settle(context.Background(), 1); {
				case errors.Is(err, runtime.ErrPermitLost):
					settled = "lost"
				case err != nil:
					settled = "error"
					failed.Add(1)
				}
				say("h %s %d %d %v %d %s %v", key, start, end, alive, lostAt, settled, known)
			}
		})
	}
	reportEvery(&wg, stop, concProgressEvery, func() { say("p %s", counts()) })
	<-stop
	wg.Wait()
	say("done %s", counts())
	return 0
}

// reportEvery has a goroutine of wg call report every period until stop
// is closed: an instance program's progress reports.
func reportEvery(wg *sync.WaitGroup, stop <-chan struct{}, period time.Duration, report func()) {
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				report()
			}
		}
	})
}

// A concRecord is one call an instance held, as it wrote it.
type concRecord struct {
	key        string
	start, end int64
	alive      bool
	lostAt     int64
	settled    string
	known      bool
}

// concCounts are an instance's counts.
type concCounts struct{ acquired, denied, lost, failed int64 }

// concInstance is a running concurrency instance, seen from the test.
type concInstance struct {
	*instance
	mu       sync.Mutex
	records  []concRecord
	progress concCounts
	final    *concCounts
	bad      []string // lines it could not parse
	drained  chan struct{}
}

// startConcInstances starts n instances holding per cfg, waits until they
// are ready, calls ready (when not nil) with each, and then lets them all
// go.
func startConcInstances(t *testing.T, n int, cfg concInstanceConfig, ready func(i int, ci *concInstance)) []*concInstance {
	t.Helper()
	var ins []*concInstance
	for i := range n {
		ci := &concInstance{instance: startProgram(t, concInstanceEnv, cfg), drained: make(chan struct{})}
		go ci.read()
		if ready != nil {
			ready(i, ci)
		}
		ins = append(ins, ci)
	}
	for _, ci := range ins {
		ci.start(t)
	}
	return ins
}

// parseCounts parses the counts of a "p" or "done" line.
func parseCounts(f []string) (concCounts, bool) {
	if len(f) != 4 {
		return concCounts{}, false
	}
	var n [4]int64
	for i, s := range f {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return concCounts{}, false
		}
		n[i] = v
	}
	return concCounts{n[0], n[1], n[2], n[3]}, true
}

// read takes the instance's lines until it exits.
func (ci *concInstance) read() {
	defer close(ci.drained)
	for line := range ci.lines {
		f := strings.Fields(line)
		ci.mu.Lock()
		ok := len(f) > 0
		if ok {
			switch f[0] {
			case "h":
				ok = len(f) == 8
				if ok {
					r := concRecord{key: f[1], alive: f[4] == "true", settled: f[6], known: f[7] == "true"}
					var e1, e2, e3 error
					r.start, e1 = strconv.ParseInt(f[2], 10, 64)
					r.end, e2 = strconv.ParseInt(f[3], 10, 64)
					r.lostAt, e3 = strconv.ParseInt(f[5], 10, 64)
					ok = errors.Join(e1, e2, e3) == nil
					ci.records = append(ci.records, r)
				}
			case "p", "done":
				var c concCounts
				c, ok = parseCounts(f[1:])
				ci.progress = c
				if f[0] == "done" {
					ci.final = &c
				}
			default:
				ok = false
			}
		}
		if !ok {
			ci.bad = append(ci.bad, line)
		}
		ci.mu.Unlock()
	}
}

// counts returns the instance's counts as it last reported them.
func (ci *concInstance) counts() concCounts {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.progress
}

// finish stops the instance, waits for its last line, and returns what
// it held and its final counts.
func (ci *concInstance) finish(t *testing.T) ([]concRecord, concCounts) {
	t.Helper()
	select {
	case <-ci.drained:
	case <-time.After(instanceReportBound):
		t.Fatalf("concurrency instance %d did not exit: %s", ci.cmd.Process.Pid, ci.stderr.String())
	}
	<-ci.done
	require.NoError(t, ci.err, "concurrency instance %d: %s", ci.cmd.Process.Pid, ci.stderr.String())
	ci.mu.Lock()
	defer ci.mu.Unlock()
	require.Empty(t, ci.bad, "lines the instance wrote that the test cannot read")
	require.NotNil(t, ci.final, "the instance's final counts; stderr: %s", ci.stderr.String())
	return ci.records, *ci.final
}

// concRunBound bounds how long a run waits for the instances to hold
// enough permits; it only decides when to give up.
const concRunBound = 2 * time.Minute

// awaitConcRun waits until each instance has acquired at least want
// permits (as it last reported), failing the test if one exits first or they do not within
// concRunBound. more, when not nil, is a further condition, which what
// describes.
func awaitConcRun(t *testing.T, ins []*concInstance, want int64, what string, more func() bool) {
	t.Helper()
	start := time.Now()
	for {
		done := true
		var got []int64
		for i, ci := range ins {
			select {
			case <-ci.done:
				t.Fatalf("concurrency instance %d exited while holding: %v: %s", i, ci.err, ci.stderr.String())
			default:
			}
			c := ci.counts()
			got = append(got, c.acquired)
			done = done && c.acquired >= want
		}
		if done && (more == nil || more()) {
			t.Logf("each instance acquired %d permits%s in %v", want, what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > concRunBound {
			t.Fatalf("the instances did not each acquire %d permits%s within %v; they acquired %v", want, what, concRunBound, got)
		}
		time.Sleep(concProgressEvery)
	}
}

// concSpans returns the spans of records that the audit counts: from a
// call's start to its end, the span in which it surely ran, admitted, its
// context not yet saying the permit was lost, so that runtime.Concurrency
// counts it as running. A call whose
// context had ended by the time it read end counts only at start, when it
// was live: that is, not at all, as maxOverlap counts no span of length
// 0; so does a call whose context had ended by then (start 0).
func concSpans(records []concRecord) []holdSpan {
	var spans []holdSpan
	for _, r := range records {
		if r.start == 0 || r.end == 0 {
			continue
		}
		end := r.end
		if !r.alive {
			end = r.start
		}
		spans = append(spans, holdSpan{r.key, r.start, end})
	}
	return spans
}

// concAudit returns the first key on which more than max spans of records
// overlap, with their number, or "" and 0, and the most spans overlapping
// on each key.
func concAudit(records []concRecord, max int) (string, int, map[string]int) {
	overlap := maxOverlap(concSpans(records))
	for k, n := range overlap {
		if n > max {
			return k, n, overlap
		}
	}
	return "", 0, overlap
}

// concBreach returns the calls on key of records whose spans (concSpans)
// overlap at the first instant more than max of them do.
func concBreach(records []concRecord, key string, max int) []concRecord {
	var on []concRecord
	for _, r := range records {
		if r.key == key && r.start != 0 && r.end != 0 {
			on = append(on, r)
		}
	}
	spans := concSpans(on)
	for _, s := range spans {
		// The instant just after s begins.
		var at []concRecord
		for i, o := range spans {
			if o.from <= s.from && s.from < o.to {
				at = append(at, on[i])
			}
		}
		if len(at) > max {
			return at
		}
	}
	return nil
}

// TestConcAuditCanFail feeds concAudit histories of Max 3: three calls
// that overlap pass; a fourth that overlaps them fails it; the fourth
// passes when its context had said the permit was lost (by start, or by
// end); and calls that only touch (one ends at the µs another starts)
// do not overlap.
func TestConcAuditCanFail(t *testing.T) {
	ok := []concRecord{
		{key: "k", start: 100, end: 200, alive: true},
		{key: "k", start: 150, end: 300, alive: true},
		{key: "k", start: 120, end: 160, alive: true},
		{key: "j", start: 100, end: 200, alive: true},
		{key: "k", start: 300, end: 400, alive: true},
	}
	key, n, overlap := concAudit(ok, 3)
	require.Empty(t, key)
	require.Equal(t, map[string]int{"k": 3, "j": 1}, overlap)

	fourth := concRecord{key: "k", start: 155, end: 158, alive: true}
	key, n, _ = concAudit(append(ok, fourth), 3)
	require.Equal(t, "k", key, "a fourth call holding at once")
	require.Equal(t, 4, n)

	lost := fourth
	lost.alive, lost.lostAt = false, 157
	key, _, _ = concAudit(append(ok, lost), 3)
	require.Empty(t, key, "a fourth call told its permit was lost")
	lost.start = 0
	key, _, _ = concAudit(append(ok, lost), 3)
	require.Empty(t, key, "a fourth call told its permit was lost before start")
}

// TestConcurrencyAuditAcrossProcesses runs three instances, each a process
// of its own with 64 goroutines, holding permits of a concurrency limit of
// Max 3 (a lease of 2s) on three keys, each call for 1ms to 10ms under
// runtime.Keep, until each instance has acquired concRunAcquired permits.
// It audits every call on Redis's clock: a call surely ran, admitted,
// from start, TIME read once Admit returned (the permit was taken before
// Admit's reply, so before start), to end, TIME read before its release
// was sent (the release runs after end), its context still live once end
// was read, so not cancelled before end; a call whose context had said
// ErrPermitLost by then counts not at all (concSpans), as only a bound on
// when it learned of the loss from below, start, is known. So spans
// overlap only where calls surely ran at once that runtime.Concurrency
// counts as running, and more than Max of them overlapping on a key is a
// breach of its guarantee: the audit can hide a breach shorter than the
// round trips around a call, never make one up. TestConcAuditCanFail
// shows it catches Max+1 overlapping calls, and
// TestConcurrencyAuditAcrossProcessesCanFail that it finds, in processes,
// calls held at Max 4 when auditing at Max 3.
//
// It can fail by: a breach (a key with more than 3 spans at once), an
// instance that acquires too few permits within concRunBound, a call
// that errs (Redis is healthy), a permit still held after every instance
// settled, or a key whose calls never overlapped at all (an audit of
// nothing).
func TestConcurrencyAuditAcrossProcesses(t *testing.T) {
	srv := redistest.StartServer(t)
	l := concLimit("conc.procs", 3, 2*time.Second)
	keys := []string{"a", "b", "c"}
	ins := startConcInstances(t, 3, concInstanceConfig{Addr: srv.Addr(), Limit: l, Keys: keys,
		Goroutines: 64, HoldMin: time.Millisecond, HoldMax: 10 * time.Millisecond}, nil)
	awaitConcRun(t, ins, concRunAcquired, "", nil)
	auditConcInstances(t, srv, l, keys, ins)
}

// concRunAcquired is how many permits each instance acquires at least in
// a run.
const concRunAcquired = 300

// stopConcInstances stops ins and returns every call they held, once
// each has exited cleanly, having made no call that erred (Redis is
// healthy) and been denied at times (the limit bound), and logs their
// counts.
func stopConcInstances(t *testing.T, ins []*concInstance) []concRecord {
	t.Helper()
	for _, ci := range ins {
		require.NoError(t, ci.stdin.Close())
	}
	var all []concRecord
	for i, ci := range ins {
		records, c := ci.finish(t)
		t.Logf("instance %d: %d acquisitions, %d denials, %d permits lost, %d errors", i, c.acquired, c.denied, c.lost, c.failed)
		require.Zero(t, c.failed, "instance %d: calls that failed: %s", i, ci.stderr.String())
		require.Positive(t, c.denied, "instance %d: the limit never bound", i)
		require.Len(t, records, int(c.acquired), "instance %d: a record per acquisition", i)
		all = append(all, records...)
	}
	return all
}

// auditConcInstances stops ins, audits what they held of l on keys
// (concAudit), and checks that calls overlapped on every key and that
// every permit was released. It returns the calls.
func auditConcInstances(t *testing.T, srv *redistest.Server, l runtime.Limit, keys []string, ins []*concInstance) []concRecord {
	t.Helper()
	all := stopConcInstances(t, ins)
	lost, settled := 0, map[string]int{}
	for _, r := range all {
		settled[r.settled]++
		if r.lostAt != 0 {
			lost++
			t.Logf("a call on %s held from %d µs learned at %d µs that its permit was lost", r.key, r.start, r.lostAt)
		}
	}
	key, n, overlap := concAudit(all, l.Max)
	t.Logf("%d calls; most held at once per key: %v; %d told their permit was lost; releases: %v", len(all), overlap, lost, settled)
	require.Empty(t, key, "%d calls held permits of %s at once, above Max %d: %+v", n, key, l.Max, concBreach(all, key, l.Max))
	for _, k := range keys {
		require.GreaterOrEqual(t, overlap[k], 2, "calls on %s never overlapped: the audit saw no contention", k)
	}
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	for _, k := range keys {
		require.Zero(t, permitsHeld(t, lim, l, k), "permits still held on %s", k)
	}
	return all
}

// TestConcurrencyAuditAcrossProcessesCanFail runs the instances of
// TestConcurrencyAuditAcrossProcesses on a limit of Max 4, a limiter that
// over-admits as seen from Max 3, and requires concAudit at Max 3 to
// find it: the audit, fed by processes and Redis's clock, sees a breach
// of one permit.
func TestConcurrencyAuditAcrossProcessesCanFail(t *testing.T) {
	srv := redistest.StartServer(t)
	l := concLimit("conc.procs.over", 4, 2*time.Second)
	ins := startConcInstances(t, 3, concInstanceConfig{Addr: srv.Addr(), Limit: l, Keys: []string{"a", "b", "c"},
		Goroutines: 64, HoldMin: time.Millisecond, HoldMax: 10 * time.Millisecond}, nil)
	awaitConcRun(t, ins, concRunAcquired, "", nil)
	all := stopConcInstances(t, ins)
	key, n, overlap := concAudit(all, 3)
	t.Logf("%d calls; most held at once per key: %v", len(all), overlap)
	require.NotEmpty(t, key, "the audit at Max 3 missed calls held at Max 4")
	require.Equal(t, 4, n)
}

// TestConcurrencyAuditCPUStarved is TestConcurrencyAuditAcrossProcesses
// with each instance held to a CPU quota of its own (a cgroup, as a
// container's CPU limit: 50ms of every second, starvedQuota), so that its
// calls and runtime.Keep's renewals stall for up to 950ms at a time, in
// the middle of holds, while the other instances call. A renewal that
// stalls must either still keep the permit or end the call's context with
// ErrPermitLost; the audit allows no more than Max calls at once. It runs
// until each instance acquired concStarvedAcquired permits and was
// throttled in concStarvedPeriods periods, and requires that some calls
// were held across a stall (longer than a renewal's interval, a third of
// the lease). It needs root and a cgroup hierarchy with the cpu
// controller; elsewhere it is skipped, saying why.
//
// The lease, 500ms, is shorter than a stall, so permits are lost and taken
// by other instances. The audit found Max+1 calls at once while Keep's
// context ended only on its expiry timer: a call stalled past its
// HeldUntil, once resumed, read its context still live before the timer's
// goroutine ran. Its Done and Err now look at HeldUntil themselves.
func TestConcurrencyAuditCPUStarved(t *testing.T) {
	var quotas []*redistest.CPUQuota
	for range 3 {
		q, err := redistest.NewCPUQuota(t, starvedQuota, starvedPeriod)
		if err != nil {
			t.Skipf("this machine does not let the test limit a process's CPU: %v", err)
		}
		quotas = append(quotas, q)
	}
	srv := redistest.StartServer(t)
	l := concLimit("conc.starved", 3, concStarvedLease)
	keys := []string{"a", "b", "c"}
	ins := startConcInstances(t, 3, concInstanceConfig{Addr: srv.Addr(), Limit: l, Keys: keys,
		Goroutines: 64, HoldMin: time.Millisecond, HoldMax: 10 * time.Millisecond}, func(i int, ci *concInstance) {
		require.NoError(t, quotas[i].Add(ci.cmd.Process.Pid))
	})
	awaitConcRun(t, ins, concStarvedAcquired, fmt.Sprintf(" and was throttled in %d periods", concStarvedPeriods), func() bool {
		for _, q := range quotas {
			_, throttled, err := q.Throttled()
			require.NoError(t, err)
			if throttled < concStarvedPeriods {
				return false
			}
		}
		return true
	})
	all := auditConcInstances(t, srv, l, keys, ins)
	stalled := 0
	for _, r := range all {
		if r.start != 0 && r.end-r.start > (l.Window/3).Microseconds() {
			stalled++
		}
	}
	t.Logf("%d calls held across a stall of more than %v", stalled, l.Window/3)
	require.Positive(t, stalled, "no call held its permit across a stall: no renewal was starved")
	for i, q := range quotas {
		periods, throttled, err := q.Throttled()
		require.NoError(t, err)
		t.Logf("instance %d: throttled in %d of %d periods of %v (quota %v)", i, throttled, periods, starvedPeriod, starvedQuota)
		require.Positive(t, throttled, "instance %d never used up its CPU quota: the test starved nothing", i)
	}
}

// The starved run's lease, shorter than the stalls, and the permits each
// instance acquires and the periods in which it is throttled at least in
// it.
const (
	concStarvedLease    = 500 * time.Millisecond
	concStarvedAcquired = 50
	concStarvedPeriods  = 5
)
