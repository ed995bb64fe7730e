package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	goruntime "runtime"
	"sync/atomic"
	"time"
)

// A wait bounds how long one decision waits for Redis, counting only the
// time this process could run. A deadline read off the process's own clock
// also passes while the process is paused (SIGSTOP, a CPU quota, a long
// stop of the world) or while the goroutine that reads Redis's reply waits
// behind others for a processor; the reply is then there, unread, and
// taking the deadline for an outage would hand a decision Redis made to the
// failure policy. So the wait wakes a few times per budget, lets every
// goroutine already runnable (the reply's reader among them) go first, and
// does not count what it was late: that time was the process's, not
// Redis's.
//
// Two bounds of wall-clock time remain: the caller's deadline, which ends
// the wait whatever the process's state, and maxStallFactor times the
// limiter's timeout, so that a process starved without respite still gets
// the policy's answer when Redis is silent too.
//
// Its times are on the monotonic clock (see mono).
type wait struct {
	start int64
	// end is when Redis's silence becomes an outage: start plus the
	// budget, plus the time the process lost.
	end int64
	// hard is the caller's deadline, or start plus maxStallFactor times
	// the limiter's timeout, whichever is first.
	hard int64
	// callerHard says hard is the caller's deadline.
	callerHard bool
	// budget is the limiter's timeout, or the time to the caller's
	// deadline when that is shorter; lost is the time the process lost to
	// its own pauses.
	budget, lost time.Duration
	// last is when the wait last woke, or started.
	last int64
	// answered is the limiter's: when (mono) the latest round trip
	// that Redis answered was sent. One sent after this wait began says
	// Redis is answering, and the wait goes on, up to hard.
	answered *atomic.Int64
	// tripped is closed when the limiter's breaker opens.
	tripped <-chan struct{}
	// waiting counts the limiter's callers in until.
	waiting *atomic.Int32
}

const (
	// wakesPerBudget is how often a wait wakes within its budget: often
	// enough that a pause is seen as such, rarely enough to cost nothing
	// beside a round trip.
	wakesPerBudget = 4
	// maxStallFactor times the limiter's timeout is the longest a
	// decision waits in wall-clock time without a caller's deadline.
	maxStallFactor = 10
)

// startWait starts w as a wait of r's timeout, or until ctx's deadline
// when that comes first.
func (r *Limiter) startWait(ctx context.Context, w *wait) {
	r.startWaitAt(ctx, w, time.Now())
}

// startWaitAt is startWait for a wait that began at now.
func (r *Limiter) startWaitAt(ctx context.Context, w *wait, now time.Time) {
	timeout := r.cfg.timeout
	stall := time.Duration(math.MaxInt64 / 4)
	if timeout < stall/maxStallFactor {
		stall = maxStallFactor * timeout
	}
	t := monoOf(now)
	*w = wait{start: t, last: t, budget: timeout, hard: t + int64(stall),
		answered: &r.answered, tripped: r.breaker.opened(), waiting: &r.waiting}
	if dl, ok := ctx.Deadline(); ok {
		if left := dl.Sub(now); left < stall {
			w.hard, w.callerHard = t+int64(left), true
			w.budget = min(max(left, 0), timeout)
		}
	}
	w.end = t + int64(w.budget)
}

// errSilent is a wait ending without a reply. Unless paused, Redis did not
// answer within the budget while this process ran: evidence about Redis.
// noConn says the round trip got no connection by the end of the budget
// (see Limiter.connectBound). paused says the process lost time to its own
// pauses, which makes it no evidence: half the budget or more, for a wait
// that the caller's deadline or the hard bound ended; any, with noConn.
type errSilent struct {
	w              *wait
	paused, noConn bool
}

func (e *errSilent) Error() string {
	whose := "the limiter's timeout"
	if e.w.callerHard && e.w.end >= e.w.hard {
		whose = "the caller's deadline"
	}
	what := "no answer"
	if e.noConn {
		what = "no connection to Redis"
	}
	msg := fmt.Sprintf("%s within %v (%s)", what, e.w.budget.Round(time.Microsecond), whose)
	if e.paused {
		msg += fmt.Sprintf(", %v of it lost to this process being paused or starved of CPU", e.w.lost.Round(time.Millisecond))
	}
	return msg
}

func (e *errSilent) Unwrap() error { return context.DeadlineExceeded }

// evidence reports whether e is evidence of an outage by itself, for a
// round trip that probe says was the breaker's probe. One wait that Redis
// left unanswered is not: its reply may be unread in a process that is
// busy or was paused, or stuck behind a slow call; nor is a round trip that
// got no connection by the end of a budget the process lost to its own
// pause. A check of Redis itself, as patient with this process's pauses as
// any wait, decides those (see Limiter.checkLiveness). The probe's silence,
// in a process that ran, is.
func (e *errSilent) evidence(probe bool) bool {
	if e.noConn {
		return !e.paused
	}
	return !e.paused && probe
}

// isPaused reports whether err is a wait that this process's own pause
// cut short.
func isPaused(err error) bool {
	var silent *errSilent
	return errors.As(err, &silent) && silent.paused
}

// resend reports whether a round trip that ended with err should be sent
// again: it got no connection in time (see Limiter.connectBound) while
// this process lost time to its own pauses, and the wait has time left.
func (w *wait) resend(err error) bool {
	return err != nil && errors.Is(err, context.DeadlineExceeded) && w.lost > 0 && mono() < w.hard
}

// outcome returns err, the error of a round trip that w waited for, as
// the wait saw it: a round trip that gave up getting a connection when
// its budget ended (context.DeadlineExceeded) is Redis not answering. An
// *errSilent is the wait's own finding already.
func (w *wait) outcome(err error) error {
	if _, silent := err.(*errSilent); err != nil && !silent && errors.Is(err, context.DeadlineExceeded) {
		return &errSilent{w: w, noConn: true, paused: w.lost > 0}
	}
	return err
}

// until waits for done, or for the wait to end. It returns nil when done
// closed, ctx's error when ctx was cancelled, ErrCircuitOpen when the
// breaker opened meanwhile (Redis failed another call), and an *errSilent
// otherwise.
func (w *wait) until(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	default:
	}
	w.waiting.Add(1)
	defer w.waiting.Add(-1)
	t := time.NewTimer(w.next(w.last))
	defer t.Stop()
	for {
		expected := w.next(w.last)
		select {
		case <-done:
			// Its round trip may have failed while the process was
			// paused, which the caller judges by lost.
			w.account(mono(), expected)
			return nil
		case <-w.tripped:
			return ErrCircuitOpen
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			// The caller's deadline: judged below, as a wake.
		case <-t.C:
		}
		// Goroutines that became runnable before this one, such as the
		// reader of a reply that has arrived, run first.
		goruntime.Gosched()
		select {
		case <-done:
			w.account(mono(), expected)
			return nil
		default:
		}
		now := mono()
		if err := w.judge(now, expected); err != nil {
			return err
		}
		t.Reset(w.next(now))
	}
}

// untilWoken waits for c's round trip as until waits for done, but woken
// by b (see watch.go) rather than by a timer of its own and the breaker's
// channel.
func (w *wait) untilWoken(ctx context.Context, b *batcher, c *call) error {
	if c.finished.Load() {
		if !c.direct {
			// The process may have been paused before its caller came
			// to wait. (A call its caller read is judged by resendAlone.)
			w.landed(c, w.next(w.last))
		}
		return nil
	}
	w.waiting.Add(1)
	defer w.waiting.Add(-1)
	ctxDone := ctx.Done()
	for {
		expected := w.next(w.last)
		due := w.last + int64(expected)
		if ctxDone == nil {
			<-c.wake
		} else {
			select {
			case <-c.wake:
			case <-ctxDone:
				if errors.Is(ctx.Err(), context.Canceled) {
					return ctx.Err()
				}
			}
		}
		if c.finished.Load() {
			w.landed(c, expected)
			return nil
		}
		select {
		case <-w.tripped:
			return ErrCircuitOpen
		default:
		}
		if mono() < due && ctx.Err() == nil {
			// Early: a wake left from an earlier use of c.
			continue
		}
		goruntime.Gosched()
		if c.finished.Load() {
			w.landed(c, expected)
			return nil
		}
		now := mono()
		if err := w.judge(now, expected); err != nil {
			return err
		}
		b.expect(c, now+int64(w.next(now)))
	}
}

// judgeRead judges at now a round trip that the caller read itself, on
// its own goroutine, and that failed with err, neither a reply nor a
// refused connection. The watch kept the wait's account meanwhile: due is
// its next wake, and late how late its wakes were. The time the read took
// counts towards the wait as a caller's sleep would, lateness (late, and
// the wake not made yet) excepted. It reports whether the call must be
// sent again (see batcher.decide for when), and otherwise the error that
// ends the wait, nil to go on.
func (w *wait) judgeRead(err error, now, due, late int64) (resend bool, found error) {
	lateness := time.Duration(max(late, now-due))
	expected := time.Duration(now-w.last) - lateness
	if errors.Is(err, context.DeadlineExceeded) || !isTimeout(err) {
		w.account(now, expected)
		return true, err
	}
	found = w.judge(now, expected)
	return found == nil, found
}

// landed accounts for the wake of c's caller once its round trip landed,
// expected after the last: only a failed round trip is judged by the time
// lost meanwhile (see resend and outcome), so only then is the clock read.
func (w *wait) landed(c *call, expected time.Duration) {
	if c.err != nil {
		w.account(mono(), expected)
	}
}

// due is when w first wakes.
func (w *wait) due() int64 {
	return w.last + int64(w.next(w.last))
}

// judge judges a wake at now, which was due expected after the last: it
// returns the error that ends the wait, or nil to wait on.
func (w *wait) judge(now int64, expected time.Duration) error {
	w.account(now, expected)
	switch {
	case now >= w.hard:
		return &errSilent{w: w, paused: 2*w.lost >= w.budget}
	case now >= w.end && w.answered.Load() > w.start:
		// Redis answered a round trip sent after this one began: this
		// reply is on its way, or unread.
		w.end = now + int64(w.period())
	case now >= w.end:
		return &errSilent{w: w}
	}
	return nil
}

// account counts the time since the last wake, which was to last expected,
// and makes now the last wake.
func (w *wait) account(now int64, expected time.Duration) {
	gap := time.Duration(now - w.last)
	switch late := gap - expected; {
	case late > w.period():
		// More than a period late: the process was stopped or throttled
		// at some point since the last wake, and none of that time
		// counts, so that the wait goes on for at least a period after
		// the process resumes: the reader of a reply that arrived
		// meanwhile has not even been woken yet.
		w.lost += gap
		w.end += int64(gap)
	case late > w.period()/8:
		// Slowed: a busy process, or a throttled one whose pauses are
		// short. The lateness does not count as waiting.
		w.end += int64(late)
	}
	w.last = now
}

// next returns how long to sleep from now until the next wake: a
// fraction of the budget, but never past the end or the hard bound.
func (w *wait) next(now int64) time.Duration {
	d := min(w.period(), time.Duration(w.end-now), time.Duration(w.hard-now))
	return max(d, 0)
}

// period is the time between wakes.
func (w *wait) period() time.Duration { return periodOf(w.budget) }

// periodOf is the time between wakes of a wait of budget.
func periodOf(budget time.Duration) time.Duration {
	return max(budget/wakesPerBudget, time.Millisecond)
}

// connectBound bounds how long a round trip for w may take to get a
// connection (the pool's wait, dialing, go-redis's retries): until a little
// before w's budget ends, so that a dead server is found dead, and the
// breaker opens on that, before the wait ends in a silence that needs a
// check. It bounds nothing once the command is written, as go-redis reads
// without the context's deadline, except on a client with
// ContextTimeoutEnabled, where it is zero (no bound): there it would let a
// paused process cut off a reply that arrived.
func (r *Limiter) connectBound(w *wait) connectBound {
	if r.readsFollowCtx {
		return connectBound{}
	}
	return connectBound{by: w.end - int64(w.period()/2), least: w.period()}
}

// directBound bounds how long a lone call that its caller reads (see
// Limiter.direct) may take to get a connection: one period of w, which
// the direct read's timeout leaves of w's budget. Past it, the call is
// handed to a round trip of its own.
func directBound(w *wait) connectBound {
	return connectBound{by: w.start + int64(w.period())}
}
