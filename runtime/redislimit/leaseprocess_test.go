package redislimit

import (
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

// TestLeasesAuditAcrossProcesses runs three instances, each a process of
// its own with leases on, on one key of a binding limit of each leasing
// algorithm, and audits every unit they admitted, from leases or per call,
// against the algorithm's bound (auditAdmissions, which
// TestAuditAdmissionsCanFail shows catches a breach of one unit). The
// instances call in bursts of 20ms, all at once, and pause for 60ms, long
// enough for a bucket to refill while they hold leases of 100ms: a bucket
// whose refill ignored the units leased out, or a lease used past its
// window, would admit more than the bound.
func TestLeasesAuditAcrossProcesses(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, l := range bindingLeaseLimits {
		t.Run(string(l.Algorithm), func(t *testing.T) {
			ins := startLeaseInstances(t, 3, leaseInstanceConfig{Addr: srv.Addr(), Limit: l, Period: 10 * time.Millisecond, Instances: 3,
				Goroutines: 4, Busy: 20 * time.Millisecond, Idle: 60 * time.Millisecond})
			for _, in := range ins {
				in.start(t)
			}
			time.Sleep(600 * time.Millisecond)
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
// admitted is audited against the algorithm's bound.
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
			time.Sleep(200 * time.Millisecond)
			paused := ins[0]
			require.NoError(t, paused.cmd.Process.Signal(syscall.SIGSTOP))
			time.Sleep(3 * leaseLifePeriods * period)
			require.NoError(t, paused.cmd.Process.Signal(syscall.SIGCONT))
			time.Sleep(300 * time.Millisecond)
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
