package redislimit

import (
	"sync/atomic"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// startDue starts, off the decision path, each periodic task due at now
// that is not running: the eviction check, whose report names l, and the
// instance beat, unless WithInstances fixed the count.
func (r *Limiter) startDue(now time.Time, l runtime.Limit) {
	t := monoOf(now)
	if r.settings.begin(t, evictionCheckInterval) {
		r.settings.start(r, l)
	}
	if r.peers.fixed == 0 && r.peers.begin(t, instanceBeat) {
		r.peers.start(r.client)
	}
}

// periodic schedules a task that runs off the decision path, on a
// goroutine of its own and one run at a time: every so often, and sooner
// after a run that Redis did not answer. The eviction check and the
// instance beat are such tasks.
type periodic struct {
	// next is when (mono) the next run is due; 0 means at once.
	next    atomic.Int64
	running atomic.Bool
}

// begin reports whether a run is due at now (mono) and none is running. If
// so, the run counts as started, the next one is due every after now, and
// the caller must make it with run.
func (p *periodic) begin(now int64, every time.Duration) bool {
	if now < p.next.Load() || !p.running.CompareAndSwap(false, true) {
		return false
	}
	p.next.Store(now + int64(every))
	return true
}

// run makes the run that begin started: task, on a goroutine of its own.
// When Redis did not answer it (task returns false), the next run is due
// retry after it ends.
func (p *periodic) run(retry time.Duration, task func() (answered bool)) {
	go func() {
		defer p.running.Store(false)
		if !task() {
			p.next.Store(mono() + int64(retry))
		}
	}()
}

// reset makes the next run due at once.
func (p *periodic) reset() { p.next.Store(0) }
