package redislimit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A failover to a replica whose clock is off the old primary's by δ: each
// algorithm fills a key to Max on the old primary A, the replica B
// (started with its clock offset by δ) syncs and is promoted, and a greedy
// client then asks B until 1.1 Window, |δ| and skewSlack have passed. The
// admissions, on the test's clock (which agrees with A's), must keep the
// bound docs/redis.md states for δ ("Clocks across a failover"):
//
//   - sliding log, sliding window and concurrency: at most Max in any span
//     of Window-max(δ, 0);
//   - fixed and calendar windows: at most Max in each window, the windows
//     being A's until the failover and B's after it, except that the window
//     A counted in goes on until B's clock leaves it (so with B ahead it
//     ends up to δ early, at once if less than δ of it was left);
//   - token bucket and GCRA: at most Burst + (span+max(δ, 0))·rate in any
//     span.
//
// All the servers run with an offset, A's chosen so that the fill falls at
// a set phase before a UTC midnight: a calendar day's boundary, and every
// fixed window's, comes within the test.

// skewTolerance covers the error of libfaketime's offset and of the
// test's reading of its own clock, both far below it.
const skewTolerance = 25 * time.Millisecond

// skewSlack is how long B is asked after the last of A's admissions stops
// counting on it: long enough for a loaded machine to get a call through,
// since B must admit something for the case to have been tested.
const skewSlack = 1500 * time.Millisecond

// skewCase is one δ with the window it is tested on: longer than |δ|, so
// that a window is not simply gone on B. fillBefore is how long before
// midnight A is filled: with B ahead by δ, the fixed window A filled in
// ends δ early, and for |δ| = 5s at once (less than δ of it is left).
type skewCase struct {
	delta, window, fillBefore time.Duration
}

var skewCases = []skewCase{
	{delta: 500 * time.Millisecond, window: 2 * time.Second, fillBefore: 1500 * time.Millisecond},
	{delta: -500 * time.Millisecond, window: 2 * time.Second, fillBefore: 1500 * time.Millisecond},
	{delta: 5 * time.Second, window: 6 * time.Second, fillBefore: 3 * time.Second},
	{delta: -5 * time.Second, window: 6 * time.Second, fillBefore: 3 * time.Second},
}

// skewAdmission is one admitted call: the test's clock (µs, scenario
// time) before and after it, and whether B admitted it.
type skewAdmission struct {
	start, end int64
	onB        bool
}

// skewLimit is one algorithm's limit.
type skewLimit struct {
	l    runtime.Limit
	grid time.Duration // a fixed or calendar window's length; 0 for the others
}

func (c skewCase) limits() []skewLimit {
	w := c.window
	return []skewLimit{
		{l: runtime.Limit{Name: "sl", Algorithm: runtime.SlidingLog, Window: w, Max: 10}},
		{l: runtime.Limit{Name: "sw", Algorithm: runtime.SlidingWindow, Window: w, Max: 10}},
		{l: runtime.Limit{Name: "fw", Algorithm: runtime.FixedWindow, Window: w, Max: 10}, grid: w},
		{l: runtime.Limit{Name: "cw", Algorithm: runtime.FixedWindow, Max: 10, Calendar: runtime.Calendar{Period: runtime.Day, Zone: "UTC"}}, grid: 24 * time.Hour},
		{l: runtime.Limit{Name: "tb", Algorithm: runtime.TokenBucket, Window: w, Max: 10}},
		{l: runtime.Limit{Name: "gc", Algorithm: runtime.GCRA, Window: w, Max: 10}},
		{l: runtime.Limit{Name: "cc", Algorithm: runtime.Concurrency, Window: w, Max: 3}},
	}
}

// ask makes one call of l on key through lim: Hold for a concurrency
// limit, whose permit is never released and so lasts one lease, and Allow
// for the others. It returns whether the call was admitted and its
// RetryAfter.
func (sl skewLimit) ask(lim *Limiter, key string) (bool, time.Duration, error) {
	if sl.l.Algorithm == runtime.Concurrency {
		ds, _, err := lim.Hold(ctx, runtime.Request{Limit: sl.l, Key: key})
		if err != nil {
			return false, 0, err
		}
		return ds.Allowed, ds.Each[0].RetryAfter, nil
	}
	d, err := lim.Allow(ctx, sl.l, key)
	return d.Allowed, d.RetryAfter, err
}

// skewRun is one case under way: its servers, clock and admissions.
type skewRun struct {
	c      skewCase
	limits []skewLimit
	offA   time.Duration // A's clock less this machine's
	fillAt time.Time     // when A is filled, fillBefore before midnight on A's clock
	a, b   *redistest.Server
	ca, cb *redis.Client
	opts   []Option
	fill   int64 // scenario time (µs) when A's fill began
	adm    [][]skewAdmission
	err    error // what stopped the run, if anything did
}

// skewLead is how long after starting its servers a case fills A: time
// for two redis-servers to start on a loaded machine.
const skewLead = 2 * time.Second

// TestClockSkewAcrossFailover runs the cases side by side, each on
// goroutines of its own from the moment its servers are up, so that the
// whole takes about as long as the longest case and no case waits for
// another's steps on a loaded machine.
func TestClockSkewAcrossFailover(t *testing.T) {
	runs := make([]*skewRun, len(skewCases))
	var wg sync.WaitGroup
	for i, c := range skewCases {
		r := startSkewRun(t, c)
		runs[i] = r
		wg.Go(func() { r.err = r.run() })
	}
	wg.Wait()
	for _, r := range runs {
		t.Run(fmt.Sprintf("delta=%v", r.c.delta), r.check)
	}
}

// startSkewRun starts A with its clock offset so that it reads fillBefore
// before a midnight skewLead after now, and B with its clock δ off A's.
// Servers that took most of skewLead to start are replaced by ones with a
// new offset, so that the fill always comes at that phase.
func startSkewRun(t *testing.T, c skewCase) *skewRun {
	r := &skewRun{c: c, limits: c.limits()}
	for attempt := 1; ; attempt++ {
		fillAt := time.Now().Add(skewLead)
		midnight := fillAt.Add(c.fillBefore).Truncate(24 * time.Hour).Add(24 * time.Hour)
		r.offA, r.fillAt = midnight.Add(-c.fillBefore).Sub(fillAt), fillAt
		r.a = redistest.StartServer(t, redistest.FakeTime(r.offA))
		r.b = redistest.StartServer(t, redistest.FakeTime(r.offA+c.delta))
		if time.Until(fillAt) > 100*time.Millisecond {
			break
		}
		if attempt == 3 {
			t.Fatalf("two redis-servers took more than %v to start, three times in a row", skewLead-100*time.Millisecond)
		}
		r.a.Stop(t)
		r.b.Stop(t)
	}
	r.adm = make([][]skewAdmission, len(r.limits))
	r.ca, r.cb = r.a.Client(t), r.b.Client(t)
	r.opts = []Option{WithFailurePolicy(FailClosed), WithTimeout(5 * time.Second), WithDenyCache(0), withCalendarClock(r.scenario)}
	return r
}

// scenario is A's clock, which the test reads as the true time.
func (r *skewRun) scenario() time.Time { return time.Now().Add(r.offA) }

func (r *skewRun) micros() int64 { return r.scenario().UnixMicro() }

// run fills every limit on A at fillBefore before midnight, fails over to
// B (once it is up), and asks B as a greedy client would until 1.1 Window,
// |δ| and skewSlack have passed since the fill: a sliding window's bucket
// counts for up to 1.1 Window, and a clock behind adds |δ| before A's
// admissions stop counting on B. It runs on a goroutine of its own, so it
// returns what stops it rather than failing the test.
func (r *skewRun) run() error {
	time.Sleep(time.Until(r.fillAt))
	limA := New(r.ca, r.opts...)
	r.fill = r.micros()
	end := time.Now().Add(r.c.window*11/10 + r.c.delta.Abs() + skewSlack)
	// The limits are filled side by side, so that all the fills stay well
	// within the window they began in.
	var fills sync.WaitGroup
	errs := make([]error, len(r.limits))
	for i, sl := range r.limits {
		fills.Go(func() {
			for range sl.l.Max {
				start := r.micros()
				ok, _, err := sl.ask(limA, "k")
				if err != nil || !ok {
					errs[i] = fmt.Errorf("%s: filling A: admitted %v, %v", sl.l.Name, ok, err)
					return
				}
				r.adm[i] = append(r.adm[i], skewAdmission{start: start, end: r.micros()})
			}
		})
	}
	fills.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := r.failover(); err != nil {
		return err
	}
	// However long the failover took, B is asked for a while.
	end = later(end, time.Now().Add(time.Second))
	limB := New(r.cb, r.opts...)
	var wg sync.WaitGroup
	for i, sl := range r.limits {
		wg.Go(func() {
			for time.Now().Before(end) {
				start := r.micros()
				ok, retry, err := sl.ask(limB, "k")
				if err != nil {
					errs[i] = fmt.Errorf("%s: asking B: %w", sl.l.Name, err)
					return
				}
				if ok {
					r.adm[i] = append(r.adm[i], skewAdmission{start: start, end: r.micros(), onB: true})
					continue
				}
				time.Sleep(min(max(retry, 2*time.Millisecond), 50*time.Millisecond))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// failover makes B A's replica, waits until it holds all of A's writes,
// and promotes it.
func (r *skewRun) failover() error {
	if err := r.cb.Do(ctx, "REPLICAOF", "127.0.0.1", r.a.Port()).Err(); err != nil {
		return fmt.Errorf("REPLICAOF on B: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info, err := r.cb.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("B not linked to A after 10s: %v\n%s", err, info)
		}
	}
	n, err := r.ca.Do(ctx, "WAIT", 1, 5000).Int()
	if err != nil || n != 1 {
		return fmt.Errorf("WAIT on A: %d replicas acknowledged, %v", n, err)
	}
	if err := r.cb.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("promoting B: %w", err)
	}
	return nil
}

// check holds every limit's admissions to its bound.
func (r *skewRun) check(t *testing.T) {
	require.NoError(t, r.err)
	for i, sl := range r.limits {
		onB := 0
		var first int64
		for _, x := range r.adm[i] {
			if x.onB {
				if onB == 0 {
					first = x.start - r.fill
				}
				onB++
			}
		}
		t.Logf("%s: B admitted %d, the first %v after the fill; most certainly within a span of Window: %d",
			sl.l.Name, onB, us(first).Round(time.Millisecond), mostWithin(r.adm[i], r.c.window))
		if onB == 0 {
			t.Errorf("%s: B admitted nothing in 1.1 Window and |δ| after the fill", sl.l.Name)
		}
		if v := skewViolation(sl, r.c.delta, r.fill, r.adm[i]); v != "" {
			t.Errorf("%s: %s\nadmissions (µs after the fill, start..end, by B):\n%s", sl.l.Name, v, describeSkew(r.adm[i], r.fill))
		}
	}
}

// skewViolation returns the first certain breach of sl's bound for δ, or
// "". An admission happened somewhere in [start, end]; a breach is
// reported only when it holds wherever in that interval each one was, and
// beyond skewTolerance.
func skewViolation(sl skewLimit, delta time.Duration, fill int64, adm []skewAdmission) string {
	adm = slices.Clone(adm)
	slices.SortFunc(adm, func(x, y skewAdmission) int { return int(x.start - y.start) })
	ahead := max(delta, 0).Microseconds()
	tol := skewTolerance.Microseconds()
	w, maxN := sl.l.Window.Microseconds(), int64(sl.l.Max)
	switch {
	case sl.grid > 0:
		return gridViolation(sl.grid.Microseconds(), delta.Microseconds(), tol, maxN, fill, adm)
	case sl.l.Algorithm == runtime.TokenBucket || sl.l.Algorithm == runtime.GCRA:
		// Between the earliest and the latest of admissions i..j, at most
		// Burst units plus the refill of that span and δ ahead: Max/W per
		// µs for the token bucket, 1/T for GCRA.
		num, den := maxN, w
		if sl.l.Algorithm == runtime.GCRA {
			num, den = 1, refCeil(w, maxN)
		}
		burst := burstOf(sl.l)
		for i := range adm {
			last := adm[i].end
			for j := i; j < len(adm); j++ {
				last = max(last, adm[j].end)
				n := int64(j - i + 1)
				span := last - adm[i].start + ahead + tol
				if n*den > burst*den+span*num {
					return fmt.Sprintf("%d admitted within %v, more than Burst %d plus the refill of that span and δ ahead",
						n, us(last-adm[i].start), burst)
				}
			}
		}
		return ""
	default:
		// At most Max within any span of Window less δ ahead.
		s := w - ahead - tol
		for i := range adm {
			last := adm[i].end
			for j := i; j < len(adm); j++ {
				last = max(last, adm[j].end)
				if last-adm[i].start >= s {
					break
				}
				if n := int64(j - i + 1); n > maxN {
					return fmt.Sprintf("%d admitted within %v < Window-max(δ,0) = %v", n, us(last-adm[i].start), us(w-ahead))
				}
			}
		}
		return ""
	}
}

// gridViolation checks windows of length g aligned to the epoch: an
// admission by A counts in A's window, one by B in B's (its clock is δ
// ahead) or in the window A filled if that is later; each window holds at
// most maxN. An admission whose interval straddles a boundary, on its
// server's clock and give or take tol, is counted in no window.
func gridViolation(g, delta, tol, maxN, fill int64, adm []skewAdmission) string {
	filled := fill / g
	per := map[int64]int64{}
	for _, x := range adm {
		off := int64(0)
		if x.onB {
			off = delta
		}
		lo, hi := floorDiv(x.start+off-tol, g), floorDiv(x.end+off+tol, g)
		if lo != hi {
			continue
		}
		k := lo
		if x.onB {
			k = max(k, filled)
		} else if k != filled {
			return fmt.Sprintf("A admitted in window %d, not %d: the fill came too close to a boundary", k, filled)
		}
		per[k]++
		if per[k] > maxN {
			return fmt.Sprintf("window %d (A's filled one is %d) holds %d > Max %d", k, filled, per[k], maxN)
		}
	}
	return ""
}

// mostWithin returns the most admissions that certainly fell within a
// span shorter than d, for the log.
func mostWithin(adm []skewAdmission, d time.Duration) int {
	adm = slices.Clone(adm)
	slices.SortFunc(adm, func(x, y skewAdmission) int { return int(x.start - y.start) })
	best := 0
	for i := range adm {
		last := adm[i].end
		for j := i; j < len(adm); j++ {
			last = max(last, adm[j].end)
			if last-adm[i].start >= d.Microseconds() {
				break
			}
			best = max(best, j-i+1)
		}
	}
	return best
}

func describeSkew(adm []skewAdmission, fill int64) string {
	var b strings.Builder
	for _, x := range adm {
		fmt.Fprintf(&b, "  %d..%d %v\n", x.start-fill, x.end-fill, x.onB)
	}
	return b.String()
}
