package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Redis paused or killed while calls hold permits of a concurrency limit:
// the failure policy holds, and nothing runs beyond the bound docs/redis.md
// states (Concurrency limits, Bounds).
//
// Two limiters, each with a client of its own, share one redis-server and
// know of each other (WithInstances), so that FailLocal's share of Max 3 is
// max(1, ⌊3/2⌋) = 1 per limiter. Workers of each hold permits of keys a and
// b under runtime.Keep, most for a few milliseconds, the first worker's for
// 1.5 leases (renewed) or until Keep says the permit is lost; Max callers
// hold the permits of key z from before the outage until they lose them.
// Redis is then
//
//   - pause: frozen (SIGSTOP) for longer than the lease, so that every
//     permit it held has expired on its clock when it resumes (SIGCONT);
//   - kill: killed (SIGKILL) and started again at once, empty, well within
//     the lease of the permits held then.
//
// Every call logs, on the process's monotonic clock, when Hold was asked
// and returned, and the span of its held section in which it surely ran
// with its context live: from once Hold had returned to the last instant
// at which it read the time and then found its context live (so a call
// stops counting once Keep has signalled the loss, as runtime.Concurrency
// counts it). The audit counts the spans overlapping on each key and
// holds each policy to its bound:
//
//   - FailClosed admits nothing while Redis is down (each call Hold began
//     and ended in the outage returns an error matching ErrUnavailable);
//     calls that held permits run until their lease ends, then Keep says
//     ErrPermitLost. At most Max at once around a pause; around a restart
//     within the lease, 2·Max: the restarted Redis admits Max more while
//     the calls whose permits it forgot run until their next renewal finds
//     them gone (or their lease passes).
//   - FailOpen admits every call of the outage, without error; no bound.
//   - FailLocal admits from each limiter's fallback at most its share at
//     once per key; at most Max + n·share at once around a pause, and
//     2·Max + n·share around a restart.
//
// Once every call begun before Redis decided again for each limiter has
// ended, at most Max run at once. The callers of z, their permits lost,
// release them only after Max new callers hold z's permits: each release
// says ErrPermitLost, and the new callers' permits stay held.
//
// The audit can fail: the same spans, with z's old callers counted until
// they released (as if they had gone on running past the loss Keep
// signalled), overlap 2·Max on z, which each case requires it to find.

// The outage cases' limit, fleet and load.
const (
	outageMax       = 3
	outageLease     = time.Second
	outageInstances = 2
	outageWorkers   = 6 // per limiter
	// outageLongHold is how long the calls of each limiter's first worker
	// hold, unless they lose their permits first; the others hold for up
	// to outageShortHold, and wait up to outageRetry more than a
	// millisecond after a call not admitted.
	outageLongHold  = outageLease * 3 / 2
	outageShortHold = 20 * time.Millisecond
	outageRetry     = 4 * time.Millisecond
	// outageCheckEvery is how often a holding call looks at its context.
	outageCheckEvery = 5 * time.Millisecond
	// outageCalls is how many calls Redis admits per key before the outage,
	// and again once the outage's calls have all ended.
	outageCalls = 20
	// outageBound bounds every wait of the test; a correct run is far
	// from it.
	outageBound = time.Minute
)

// outageKeys are the keys of the workers; outageStaleKey is held by Max
// callers from before the outage.
var outageKeys = []string{"a", "b"}

const outageStaleKey = "z"

// An outageCall is one call of a worker or of z's callers, as it logged
// itself. Times are in ns since the run's base.
type outageCall struct {
	lim             int
	key             string
	asked, answered int64
	err             error // Hold's
	admitted        bool
	source          runtime.Source
	// start and alive bound the span in which the call surely ran
	// admitted, its context live; start is 0 when its context had ended
	// by the time Hold returned.
	start, alive int64
	// lost says whether Keep ended the context with ErrPermitLost, seen
	// at lostSeen; leaseOver whether HeldUntil had passed by then.
	lost      bool
	lostSeen  int64
	leaseOver bool
	// ended is when the held section ended (alive or lost), settled when
	// Settle returned settleErr.
	ended, settled int64
	settleErr      error
}

// outageRun is one case's limiters, load and log.
type outageRun struct {
	t      *testing.T
	srv    *redistest.Server
	limit  runtime.Limit
	lims   []*Limiter
	events []*degradedLog
	base   time.Time

	mu sync.Mutex
	// calls are the calls that have ended, logged; active those asked
	// whose held section has not ended yet.
	calls  []*outageCall
	active map[*outageCall]bool

	stop     chan struct{}
	settleZ  chan struct{}
	workers  sync.WaitGroup
	staleZ   sync.WaitGroup
	staleLog []*outageCall
}

func newOutageRun(t *testing.T, srv *redistest.Server, policy FailurePolicy) *outageRun {
	r := &outageRun{t: t, srv: srv, limit: concLimit("conc.outage", outageMax, outageLease), base: time.Now(),
		stop: make(chan struct{}), settleZ: make(chan struct{}), active: map[*outageCall]bool{}}
	for range outageInstances {
		// Each limiter has its own client, as separate processes would.
		client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = client.Close() })
		events := &degradedLog{}
		r.events = append(r.events, events)
		r.lims = append(r.lims, New(client, WithFailurePolicy(policy), WithInstances(outageInstances), WithOnDegraded(events.record)))
	}
	return r
}

// now is the time since the run's base, on the monotonic clock.
func (r *outageRun) now() int64 { return int64(time.Since(r.base)) }

// call asks limiter li for a permit of key and, admitted, holds it under
// runtime.Keep for hold or until Keep says it is lost, then releases it;
// a lost call of z's releases it only once settleZ is closed. It logs the
// call, denials included, and reports whether it was admitted.
func (r *outageRun) call(li int, key string, hold time.Duration, stale bool) *outageCall {
	c := &outageCall{lim: li, key: key}
	r.mu.Lock()
	c.asked = r.now()
	r.active[c] = true
	r.mu.Unlock()
	ds, h, err := r.lims[li].Hold(ctx, runtime.Request{Limit: r.limit, Key: key})
	c.answered, c.err, c.admitted, c.source = r.now(), err, err == nil && ds.Allowed, ds.Source
	if !c.admitted {
		r.ended(c)
		r.log(c)
		return c
	}
	run, stopKeep := runtime.Keep(ctx, h)
	// A time read before the context is seen live is one at which it was.
	if at := r.now(); run.Err() == nil {
		c.start, c.alive = at, at
	}
	if c.start != 0 {
		until := time.Now().Add(hold)
		timer := time.NewTimer(hold)
		tick := time.NewTicker(outageCheckEvery)
		for {
			select {
			case <-timer.C:
			case <-run.Done():
			case <-tick.C:
			}
			at := r.now()
			if run.Err() != nil {
				break
			}
			c.alive = at
			if !time.Now().Before(until) {
				break
			}
		}
		timer.Stop()
		tick.Stop()
	}
	if errors.Is(context.Cause(run), runtime.ErrPermitLost) {
		c.lost, c.lostSeen = true, r.now()
		c.leaseOver = !time.Now().Before(h.(runtime.PermitHold).HeldUntil())
	}
	r.ended(c)
	stopKeep()
	if stale {
		<-r.settleZ
	}
	c.settleErr = h.Settle(ctx, 1)
	c.settled = r.now()
	r.log(c)
	return c
}

// ended ends the held section of c, or its call when it was not
// admitted.
func (r *outageRun) ended(c *outageCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.ended = r.now()
	delete(r.active, c)
}

// inFlight reports whether a call asked before at has not ended its held
// section.
func (r *outageRun) inFlight(at int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.active {
		if c.asked < at {
			return true
		}
	}
	return false
}

func (r *outageRun) log(c *outageCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// logged returns the calls logged so far.
func (r *outageRun) logged() []*outageCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*outageCall(nil), r.calls...)
}

// holdStale has Max callers, spread over the limiters, hold z's permits
// until they lose them, and waits until they all hold.
func (r *outageRun) holdStale() {
	held := make(chan *outageCall, outageMax)
	for i := range outageMax {
		r.staleZ.Go(func() {
			for {
				c := r.call(i%outageInstances, outageStaleKey, outageBound, true)
				if c.admitted {
					return
				}
				if c.err != nil {
					// Calls before the outage fail only on a machine
					// too loaded for the test.
					r.t.Errorf("a caller of z was not answered: %v", c.err)
					held <- c
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	// The callers log themselves once they release, so look at z in Redis.
	require.Eventually(r.t, func() bool { return permitsHeld(r.t, r.lims[0], r.limit, outageStaleKey) == outageMax },
		outageBound, time.Millisecond, "z's callers hold its permits")
	select {
	case <-held:
		r.t.FailNow()
	default:
	}
}

// startWorkers starts the workers of each limiter on outageKeys.
func (r *outageRun) startWorkers() {
	for li := range r.lims {
		for g := range outageWorkers {
			r.workers.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-r.stop:
						return
					default:
					}
					hold := time.Millisecond + rand.N(outageShortHold)
					if g == 0 {
						hold = outageLongHold
					}
					if c := r.call(li, outageKeys[(g+i)%len(outageKeys)], hold, false); !c.admitted {
						time.Sleep(time.Millisecond + rand.N(outageRetry))
					}
				}
			})
		}
	}
}

// await waits until cond holds, failing the test, with what, if it does not
// within outageBound.
func (r *outageRun) await(what string, cond func(calls []*outageCall) bool) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return cond(r.logged()) }, outageBound, 5*time.Millisecond, what)
}

// storeAdmitted counts the calls on key that Redis admitted, asked from
// since on.
func storeAdmitted(calls []*outageCall, key string, since int64) int {
	n := 0
	for _, c := range calls {
		if c.key == key && c.admitted && c.source == runtime.SourceStore && c.asked >= since {
			n++
		}
	}
	return n
}

// awaitFrozen waits until the process pid is stopped, where /proc says so:
// SIGSTOP is delivered asynchronously.
func awaitFrozen(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true // no /proc: the signal is all there is to go by
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		return len(f) > 0 && (f[0] == "T" || f[0] == "t")
	}, outageBound, time.Millisecond, "redis-server stopped by SIGSTOP")
}

// outageSpans returns the spans of calls that the audit counts; loss
// ignored, z's old callers count until they released.
func outageSpans(calls []*outageCall, ignoreLoss bool) []holdSpan {
	var spans []holdSpan
	for _, c := range calls {
		if c.start == 0 {
			continue
		}
		to := c.alive
		if ignoreLoss && c.key == outageStaleKey && c.lost {
			to = c.settled
		}
		spans = append(spans, holdSpan{c.key, c.start, to})
	}
	return spans
}

// clipSpans returns the parts of spans from from on.
func clipSpans(spans []holdSpan, from int64) []holdSpan {
	var out []holdSpan
	for _, s := range spans {
		if s.to > from {
			out = append(out, holdSpan{s.key, max(s.from, from), s.to})
		}
	}
	return out
}

// TestPermitOutagePolicyBound runs each failure policy through a pause and
// a kill of Redis under calls holding permits, and audits them as the
// comment above says.
func TestPermitOutagePolicyBound(t *testing.T) {
	share := max(1, outageMax/outageInstances)
	for _, policy := range []FailurePolicy{FailClosed, FailOpen, FailLocal} {
		for _, kill := range []bool{false, true} {
			// The bound each policy states on the calls of a key at once
			// (0: none).
			var bound int
			switch policy {
			case FailClosed:
				bound = outageMax
			case FailLocal:
				bound = outageMax + outageInstances*share
			}
			name := "pause"
			if kill {
				name = "kill"
				if bound != 0 {
					bound += outageMax
				}
			}
			t.Run(policy.String()+"/"+name, func(t *testing.T) {
				testPermitOutage(t, policy, kill, bound, share)
			})
		}
	}
}

func testPermitOutage(t *testing.T, policy FailurePolicy, kill bool, bound, share int) {
	srv := redistest.StartServer(t)
	r := newOutageRun(t, srv, policy)
	r.holdStale()
	r.startWorkers()
	stopped := false
	stopWorkers := func() {
		if !stopped {
			stopped = true
			close(r.stop)
			r.workers.Wait()
		}
	}
	defer stopWorkers()
	r.await("Redis admits calls on every key before the outage", func(calls []*outageCall) bool {
		return storeAdmitted(calls, "a", 0) >= outageCalls && storeAdmitted(calls, "b", 0) >= outageCalls
	})

	// The outage, from outStart to outEnd.
	degradedBefore := make([]int, len(r.events))
	for i, ev := range r.events {
		degradedBefore[i] = ev.len()
	}
	var outStart, outEnd int64
	outageSeen := func(calls []*outageCall) bool {
		for i, ev := range r.events {
			if ev.len() == degradedBefore[i] {
				return false
			}
			if policy == FailClosed {
				continue
			}
			admitted := false
			for _, c := range calls {
				admitted = admitted || c.lim == i && c.admitted && c.asked >= outStart
			}
			if !admitted {
				return false
			}
		}
		return true
	}
	if kill {
		srv.Stop(t)
		outStart = r.now()
		r.await("each limiter decides by its policy", outageSeen)
		outEnd = r.now()
		srv.Start(t)
	} else {
		srv.Pause(t)
		awaitFrozen(t, srv.PID())
		outStart = r.now()
		r.await("each limiter decides by its policy, and every permit taken before the pause has expired on Redis's clock",
			func(calls []*outageCall) bool {
				// Redis ran every renewal it ran before outStart, so its
				// permits have all expired once a lease, and a margin
				// for the clocks, has passed since.
				if r.now()-outStart < int64(outageLease+100*time.Millisecond) || !outageSeen(calls) {
					return false
				}
				// Every call asked before has ended, z's by losing
				// their permits.
				return !r.inFlight(outStart)
			})
		outEnd = r.now()
		srv.Resume(t)
	}

	// Redis decides again for each limiter from back on, and every call
	// asked before then has ended by settledAt.
	var back int64
	r.await("Redis decides again for each limiter", func(calls []*outageCall) bool {
		for i := range r.lims {
			decided := false
			for _, c := range calls {
				decided = decided || c.lim == i && c.asked >= outEnd && c.err == nil && c.source == runtime.SourceStore
			}
			if !decided {
				return false
			}
		}
		back = r.now()
		return true
	})
	// z's callers end theirs with the loss of their permits.
	r.await("every call asked before Redis decided again has ended", func([]*outageCall) bool { return !r.inFlight(back) })
	settledAt := r.now()

	// New callers take z's permits; then its old callers release theirs,
	// which Redis forgot (kill) or let expire (pause).
	var fresh []*outageCall
	var freshStops []func()
	var freshHolds []runtime.PermitHold
	for i := range outageMax {
		li := i % outageInstances
		h := awaitAdmitted(t, r.lims[li], r.limit, outageStaleKey)
		kept, stopKeep := runtime.Keep(ctx, h)
		c := &outageCall{lim: li, key: outageStaleKey, admitted: true, start: r.now()}
		require.NoError(t, kept.Err())
		fresh, freshStops, freshHolds = append(fresh, c), append(freshStops, stopKeep), append(freshHolds, h)
		defer stopKeep()
	}
	close(r.settleZ)
	r.staleZ.Wait()
	var stale []*outageCall
	for _, c := range r.logged() {
		if c.key == outageStaleKey {
			stale = append(stale, c)
		}
	}
	require.Len(t, stale, outageMax)
	for _, c := range stale {
		require.True(t, c.lost, "z's old caller was told its permit was lost")
		require.ErrorIs(t, c.settleErr, runtime.ErrPermitLost, "the release of a permit lost in the outage says so")
	}
	require.Equal(t, outageMax, permitsHeld(t, r.lims[0], r.limit, outageStaleKey), "the lost releases freed no other permit")
	ds, _, err := r.lims[1].Hold(ctx, runtime.Request{Limit: r.limit, Key: outageStaleKey})
	require.NoError(t, err)
	require.False(t, ds.Allowed, "z's new callers hold every permit")
	for i, h := range freshHolds {
		require.NoError(t, h.Renew(ctx), "the new callers' permits are held")
		at := r.now()
		freshStops[i]()
		fresh[i].alive, fresh[i].ended = at, at
		require.NoError(t, h.Settle(ctx, 1))
		fresh[i].settled = r.now()
		r.log(fresh[i])
	}

	r.await("Redis admits calls on every key once the outage's calls have ended", func(calls []*outageCall) bool {
		return storeAdmitted(calls, "a", settledAt) >= outageCalls && storeAdmitted(calls, "b", settledAt) >= outageCalls
	})
	stopWorkers()
	r.audit(policy, kill, bound, share, outStart, outEnd, back, settledAt)
	for _, k := range append([]string{outageStaleKey}, outageKeys...) {
		// Acquisitions Redis ran after their callers gave up on them
		// (a pause) hold permits that nobody releases, until their lease
		// ends.
		require.Eventually(t, func() bool { return permitsHeld(t, r.lims[0], r.limit, k) == 0 }, outageBound, 10*time.Millisecond,
			"permits still held on %s", k)
	}
}

// audit checks the calls of a case against its policy's bound (0: none),
// and logs what it found. The outage ran from outStart to outEnd; Redis
// decided again for each limiter from back on, and every call asked before
// then had ended by settledAt.
func (r *outageRun) audit(policy FailurePolicy, kill bool, bound, share int, outStart, outEnd, back, settledAt int64) {
	t := r.t
	calls := r.logged()
	spans := outageSpans(calls, false)
	overall := maxOverlap(spans)
	after := maxOverlap(clipSpans(spans, settledAt))
	ignoringLoss := maxOverlap(outageSpans(calls, true))

	fallback := map[int][]holdSpan{}
	var admitted, denied, refused, lost, lostReleases, during, duringAdmitted int
	sources := map[runtime.Source]int{}
	for _, c := range calls {
		switch {
		case c.admitted:
			admitted++
			sources[c.source]++
		case c.err != nil:
			refused++
		default:
			denied++
		}
		if c.lost {
			lost++
		}
		if errors.Is(c.settleErr, runtime.ErrPermitLost) {
			lostReleases++
		}
		if c.admitted && c.source == runtime.SourceFallback && c.start != 0 {
			fallback[c.lim] = append(fallback[c.lim], holdSpan{c.key, c.start, c.alive})
		}
		if c.asked >= outStart && c.answered <= outEnd {
			// Asked and answered while Redis was down.
			during++
			if c.admitted {
				duringAdmitted++
			}
			switch policy {
			case FailClosed:
				require.ErrorIs(t, c.err, runtime.ErrUnavailable, "FailClosed admits nothing while Redis is down: %+v", c)
			case FailOpen:
				require.NoError(t, c.err)
				require.True(t, c.admitted, "FailOpen admits: %+v", c)
				require.Equal(t, runtime.SourceFailOpen, c.source)
			case FailLocal:
				require.NoError(t, c.err)
				require.Equal(t, runtime.SourceFallback, c.source, "%+v", c)
			}
		}
		if c.asked >= back {
			require.NoError(t, c.err, "a call once Redis was back")
			require.Equal(t, runtime.SourceStore, c.source, "a call once Redis was back is Redis's: %+v", c)
		}
		if !kill && c.lost && c.asked < outStart && c.source == runtime.SourceStore {
			require.True(t, c.leaseOver, "a call that held a permit when Redis froze lost it before its lease had passed: %+v", c)
		}
	}
	fallbackMost := map[int]map[string]int{}
	for li, s := range fallback {
		fallbackMost[li] = maxOverlap(s)
	}
	t.Logf("%d calls: %d admitted %v, %d denied, %d refused; %d told their permit was lost, %d releases said it was lost",
		len(calls), admitted, sources, denied, refused, lost, lostReleases)
	t.Logf("while Redis was down: %d calls asked and answered, %d admitted; fallback calls at once per limiter and key: %v",
		during, duringAdmitted, fallbackMost)
	t.Logf("most calls at once per key: %v (bound %d, 0 for none); once the outage's calls had ended: %v; "+
		"counting z's old callers until they released: %v", overall, bound, after, ignoringLoss)

	require.Positive(t, during, "no call was asked and answered while Redis was down")
	if policy != FailClosed {
		require.Positive(t, duringAdmitted, "%v admitted nothing while Redis was down", policy)
	}
	if bound > 0 {
		for k, n := range overall {
			require.LessOrEqual(t, n, bound, "calls on %s at once around the outage, above %v's bound", k, policy)
		}
	}
	for li, most := range fallbackMost {
		for k, n := range most {
			require.LessOrEqual(t, n, share, "limiter %d ran more than its share of %s from its fallback at once", li, k)
		}
	}
	for k, n := range after {
		require.LessOrEqual(t, n, outageMax, "calls on %s at once after the outage's calls ended", k)
	}
	for _, k := range outageKeys {
		require.GreaterOrEqual(t, after[k], 2, "calls on %s never overlapped after the outage: the audit saw no contention", k)
	}
	require.Equal(t, outageMax, overall[outageStaleKey], "z's callers, old and new, one Max at a time")
	require.Equal(t, 2*outageMax, ignoringLoss[outageStaleKey],
		"the audit, counting z's old callers past the loss Keep signalled, must find them beside the new ones")
}

// TestPermitsForgottenInARestart shows what a restart without persistence
// does to calls in flight: Redis forgets their permits at once, and a
// limiter asking the restarted Redis is admitted Max more calls while the
// old ones, their contexts still live, run until their next renewal finds
// the permit gone. Their lease is long here, so no renewal comes in
// between: 2·Max calls of the key run at once, as docs/redis.md states.
// Then a renewal reports each old permit lost, its release says so, and
// the new permits stay held.
func TestPermitsForgottenInARestart(t *testing.T) {
	srv := redistest.StartServer(t)
	l := concLimit("conc.restart", 2, time.Minute)
	old := New(srv.Client(t), WithFailurePolicy(FailClosed))
	var holds []runtime.PermitHold
	var kept []context.Context
	for range l.Max {
		h := holdPermit(t, old, l, "k")
		run, stop := runtime.Keep(ctx, h)
		defer stop()
		holds, kept = append(holds, h), append(kept, run)
	}
	srv.Stop(t)
	srv.Start(t)
	// Another instance, with a client of its own, asks the new Redis.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	other := New(client, WithFailurePolicy(FailClosed))
	var fresh []runtime.PermitHold
	for range l.Max {
		fresh = append(fresh, holdPermit(t, other, l, "k"))
	}
	for _, run := range kept {
		require.NoError(t, run.Err(), "the old calls run on beside the new ones until a renewal")
	}
	for _, h := range holds {
		require.Eventually(t, func() bool {
			err := h.Renew(ctx)
			return errors.Is(err, runtime.ErrPermitLost)
		}, outageBound, 10*time.Millisecond, "the renewal finds the permit gone")
		require.ErrorIs(t, h.Settle(ctx, 1), runtime.ErrPermitLost)
	}
	require.Equal(t, l.Max, permitsHeld(t, other, l, "k"), "the lost releases freed none of the new permits")
	for _, h := range fresh {
		require.NoError(t, h.Renew(ctx))
		require.NoError(t, h.Settle(ctx, 1))
	}
}
