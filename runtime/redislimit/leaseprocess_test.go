package redislimit

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// bindingLeaseLimits are limits that the lease tests' instances, calling
// as fast as they can, keep at their bound, one per leasing algorithm.
var bindingLeaseLimits = []runtime.Limit{
	{Name: "lease.bind.gcra", Window: time.Second, Max: 4000, Burst: 200, Algorithm: runtime.GCRA},
	{Name: "lease.bind.tb", Window: time.Second, Max: 4000, Burst: 200, Algorithm: runtime.TokenBucket},
	{Name: "lease.bind.fw", Window: 50 * time.Millisecond, Max: 200, Algorithm: runtime.FixedWindow},
	{Name: "lease.bind.sw", Window: 250 * time.Millisecond, Max: 1000, Algorithm: runtime.SlidingWindow},
}

// How long the lease tests' instances decide: not for a fixed time, as a
// loaded machine may give them too little CPU in it to lease at all, but
// until each has made a number of decisions and leases admitted some
// units (and for at least a stretch of the wall clock, so that an idle
// machine runs as many of the instances' bursts as it ever did).
const (
	// leaseRunBound bounds the wait; it only decides when to give up.
	leaseRunBound = 2 * time.Minute
	// leaseRunDecisions is the decisions, errors aside, that each
	// instance makes at least in each stretch of a run.
	leaseRunDecisions = 100
	// leaseRunLeased is the units that the instances together admit at
	// least from leases in a run.
	leaseRunLeased = 50
	// leaseRunResumed is the units that a paused instance admits at
	// least in calls it began once resumed.
	leaseRunResumed = 20
)

// decisionsIn returns the decisions in an instance's counts by source,
// errors aside.
func decisionsIn(counts map[string]int64) int64 {
	n := int64(0)
	for s, c := range counts {
		if s != "error" {
			n += c
		}
	}
	return n
}

// awaitLeaseRun lets ins decide for at least least and then until enough,
// given each instance's counts by source so far, says they got far
// enough; it fails the test, saying it waited for want, if they do not
// within leaseRunBound, or if an instance exits.
func awaitLeaseRun(t *testing.T, ins []*leaseInstance, least time.Duration, want string, enough func(decided []map[string]int64) bool) {
	t.Helper()
	start := time.Now()
	time.Sleep(least)
	for {
		decided := make([]map[string]int64, len(ins))
		for i, in := range ins {
			select {
			case <-in.exited:
				t.Fatalf("lease instance %d exited while deciding: %s", i, in.stderr.String())
			default:
			}
			decided[i] = in.decided()
		}
		if enough(decided) {
			t.Logf("the instances got to %s in %v", want, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > leaseRunBound {
			t.Fatalf("the instances did not get to %s within %v; their decisions by source: %v", want, leaseRunBound, decided)
		}
		time.Sleep(leaseProgressEvery)
	}
}

// TestLeasesAuditAcrossProcesses runs three instances, each a process of
// its own with leases on, on one key of a binding limit of each leasing
// algorithm, and audits every unit they admitted, from leases or per call,
// against the algorithm's bound (auditAdmissions, which
// TestAuditAdmissionsCanFail shows catches a breach of one unit). The
// instances call in bursts of 20ms, all at once, and pause for 60ms, long
// enough for a bucket to refill while they hold leases of 100ms: a bucket
// whose refill ignored the units leased out, or a lease used past its
// window, would admit more than the bound. They decide for at least 600ms
// and until each made leaseRunDecisions decisions and leases admitted
// leaseRunLeased units (awaitLeaseRun).
func TestLeasesAuditAcrossProcesses(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, l := range bindingLeaseLimits {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			ins := startLeaseInstances(t, 3, leaseInstanceConfig{Addr: srv.Addr(), Limit: l, Period: 10 * time.Millisecond, Instances: 3,
				Goroutines: 4, Busy: 20 * time.Millisecond, Idle: 60 * time.Millisecond})
			for _, in := range ins {
				in.start(t)
			}
			awaitLeaseRun(t, ins, 600*time.Millisecond,
				fmt.Sprintf("%d decisions each and %d units admitted from leases", leaseRunDecisions, leaseRunLeased),
				func(decided []map[string]int64) bool {
					leased := int64(0)
					for _, c := range decided {
						if decisionsIn(c) < leaseRunDecisions {
							return false
						}
						leased += c[runtime.SourceLease.String()]
					}
					return leased >= leaseRunLeased
				})
			var all []admitted
			leased := int64(0)
			for _, in := range ins {
				in.stop(t)
			}
			for _, in := range ins {
				counts := in.finish(t)
				t.Logf("%s: instance %v", l.Algorithm, counts)
				leased += counts[runtime.SourceLease.String()]
				all = append(all, in.admissions()...)
			}
			require.Empty(t, auditAdmissions(l, all))
			require.Positive(t, leased, "admissions from leases")
		})
	}
}

// TestLeasesWithPausedInstance is TestLeasesAuditAcrossProcesses with one
// instance stopped (SIGSTOP) for three lease lives in the middle of the
// run, leases in hand, and resumed (SIGCONT): a paused instance must not
// spend, once it runs again, units of leases that Redis ended meanwhile,
// as the other instances and the refill have used that room. Every unit
// admitted is audited against the algorithm's bound. The instance is
// stopped once every instance made leaseRunDecisions decisions and it
// admitted units from leases (and no sooner than 200ms in); once resumed,
// the run goes on until every instance made leaseRunDecisions more, the
// paused one admitted leaseRunResumed units in calls it began after its
// resumption, and leases admitted leaseRunLeased units in all (and for
// at least 300ms).
func TestLeasesWithPausedInstance(t *testing.T) {
	srv := redistest.StartServer(t)
	const period = 10 * time.Millisecond
	for _, l := range bindingLeaseLimits {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			ins := startLeaseInstances(t, 3, leaseInstanceConfig{Addr: srv.Addr(), Limit: l, Period: period, Instances: 3,
				Goroutines: 4, Busy: 20 * time.Millisecond, Idle: 60 * time.Millisecond})
			for _, in := range ins {
				in.start(t)
			}
			paused := ins[0]
			awaitLeaseRun(t, ins, 200*time.Millisecond,
				fmt.Sprintf("%d decisions each, some admitted from leases by the instance to pause", leaseRunDecisions),
				func(decided []map[string]int64) bool {
					for _, c := range decided {
						if decisionsIn(c) < leaseRunDecisions {
							return false
						}
					}
					return decided[0][runtime.SourceLease.String()] > 0
				})
			require.NoError(t, paused.cmd.Process.Signal(syscall.SIGSTOP))
			time.Sleep(3 * leaseLifePeriods * period)
			var before []map[string]int64
			for _, in := range ins {
				before = append(before, in.decided())
			}
			resumed := time.Now().UnixMicro()
			require.NoError(t, paused.cmd.Process.Signal(syscall.SIGCONT))
			awaitLeaseRun(t, ins, 300*time.Millisecond,
				fmt.Sprintf("%d more decisions by each instance not paused, %d units admitted by the paused one in calls begun once resumed and %d units admitted from leases in all",
					leaseRunDecisions, leaseRunResumed, leaseRunLeased),
				func(decided []map[string]int64) bool {
					leased := int64(0)
					for i, c := range decided {
						if i > 0 && decisionsIn(c)-decisionsIn(before[i]) < leaseRunDecisions {
							return false
						}
						leased += c[runtime.SourceLease.String()]
					}
					return leased >= leaseRunLeased && paused.admittedSince(resumed) >= leaseRunResumed
				})
			for _, in := range ins {
				in.stop(t)
			}
			var all []admitted
			leased := int64(0)
			for _, in := range ins {
				counts := in.finish(t)
				leased += counts[runtime.SourceLease.String()]
				all = append(all, in.admissions()...)
			}
			require.Empty(t, auditAdmissions(l, all))
			require.Positive(t, leased, "admissions from leases")
			require.NotEmpty(t, paused.admissions(), "the paused instance admitted nothing")
		})
	}
}
