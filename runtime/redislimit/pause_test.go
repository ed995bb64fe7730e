package redislimit

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
)

// A stalled app is not a stalled Redis. These tests run app instances in
// processes of their own, with the limiter's defaults (FailLocal, a 500ms
// timeout, batching and the deny cache), against a redis-server that stays
// healthy throughout, and stall the instances themselves, each stall
// longer than the timeout: frozen with SIGSTOP, or held to a small CPU
// quota. A
// decision whose deadline passes while its own process was not running has
// learnt nothing about Redis; were it taken for an outage, the breaker
// would send the instance's decisions to its in-memory fallback, where each
// instance admits Max on its own. The instances walk the same fresh keys,
// at Max 3 per hour and 4 attempts per key and instance, so every such
// decision shows up in the audit as a key admitted more than Max, or as a
// decision whose source is not Redis.
//
// Redis's health is these tests' premise, and on a loaded machine the
// redis-server process competes for CPU too: it runs at a high priority
// (as root; elsewhere nice only warns), and watchRedis measures from the
// test how promptly it answered. Should it have taken as long as the
// limiters' timeout, the audit holds the failure policy to its bound
// instead of to Redis's exactness.

// startStallServer starts the redis-server of a stall test.
func startStallServer(t *testing.T) *redistest.Server {
	return redistest.StartServer(t, redistest.Under("nice", "-n", "-10"))
}

// stalledConfig is what each instance decides.
func stalledConfig(srv *redistest.Server) instanceConfig {
	return instanceConfig{
		Addr:       srv.Addr(),
		Name:       "Stalled.Fresh",
		Window:     time.Hour,
		Max:        3,
		Attempts:   4,
		Goroutines: 16,
		MaxKeys:    1 << 21,
		Instances:  stalledInstances,
	}
}

const (
	stalledInstances = 3
	// pauses per instance, each longer than the limiter's 500ms timeout,
	// after a gap drawn from [pauseGapMin, pauseGapMin+pauseGapSpread).
	pausesPerInstance = 5
	pauseLength       = 600 * time.Millisecond
	pauseGapMin       = 100 * time.Millisecond
	pauseGapSpread    = 200 * time.Millisecond
)

// TestPausedInstancesNeverOverAdmit freezes each instance with SIGSTOP for
// 600ms at a time, at offsets of its own, while they decide.
func TestPausedInstancesNeverOverAdmit(t *testing.T) {
	srv := startStallServer(t)
	cfg := stalledConfig(srv)
	var instances []*instance
	for range stalledInstances {
		instances = append(instances, startInstance(t, cfg))
	}
	for _, in := range instances {
		in.start(t)
	}
	watched := watchRedis(t, srv)
	var wg sync.WaitGroup
	errs := make(chan error, stalledInstances)
	for _, in := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range pausesPerInstance {
				time.Sleep(pauseGapMin + rand.N(pauseGapSpread))
				if err := redistest.PauseProcess(in.cmd.Process); err != nil {
					errs <- err
					return
				}
				time.Sleep(pauseLength)
				// Never left frozen: the report needs the instance running.
				if err := redistest.ResumeProcess(in.cmd.Process); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "pausing an instance")
	}
	reports := finishInstances(t, instances)
	t.Logf("each instance frozen %d times for %v", pausesPerInstance, pauseLength)
	auditInstances(t, cfg, reports, watched())
}

// CPU quota of the starved instances: each may run 50ms of every second
// (the longest period a cgroup takes), so once its quota is spent it waits
// up to 950ms, longer than the limiter's timeout, for the next period.
const (
	starvedQuota  = 50 * time.Millisecond
	starvedPeriod = time.Second
	starvedRun    = 4 * time.Second
)

// TestCPUStarvedInstancesNeverOverAdmit holds each instance to a CPU quota
// of its own (a cgroup, as a container's CPU limit) while they decide. It
// needs root and a cgroup hierarchy with the cpu controller; elsewhere it
// is skipped, saying why (TestPausedInstancesNeverOverAdmit stalls
// instances everywhere).
func TestCPUStarvedInstancesNeverOverAdmit(t *testing.T) {
	var quotas []*redistest.CPUQuota
	for range stalledInstances {
		q, err := redistest.NewCPUQuota(t, starvedQuota, starvedPeriod)
		if err != nil {
			t.Skipf("this machine does not let the test limit a process's CPU: %v", err)
		}
		quotas = append(quotas, q)
	}
	srv := startStallServer(t)
	cfg := stalledConfig(srv)
	var instances []*instance
	for i := range stalledInstances {
		in := startInstance(t, cfg)
		require.NoError(t, quotas[i].Add(in.cmd.Process.Pid))
		instances = append(instances, in)
	}
	for _, in := range instances {
		in.start(t)
	}
	watched := watchRedis(t, srv)
	time.Sleep(starvedRun)
	reports := finishInstances(t, instances)
	for i, q := range quotas {
		periods, throttled, err := q.Throttled()
		require.NoError(t, err)
		t.Logf("instance %d: throttled in %d of %d periods of %v (quota %v)", i, throttled, periods, starvedPeriod, starvedQuota)
		require.Positive(t, throttled, "instance %d never used up its CPU quota: the test starved nothing", i)
	}
	auditInstances(t, cfg, reports, watched())
}

// TestPausedLoneReadNeverOverAdmits freezes an instance while the replies
// to its lone decisions are on their way. A lone decision is read on its
// caller's goroutine, with the limiter's timeout as the read's own (see
// batcher.decide), so a pause of the instance that outlasts the timeout
// makes the read time out on resuming, with the reply unread. Redis is
// frozen first, for long enough that the instance's requests wait for it;
// then the instance is frozen, Redis resumes and answers, and the instance
// stays frozen past its timeout. Taken for Redis's silence, such a read
// would send the decision to the fallback; the audit finds that.
func TestPausedLoneReadNeverOverAdmits(t *testing.T) {
	srv := startStallServer(t)
	cfg := stalledConfig(srv)
	// Two callers: the round trips the batcher allows at once, both read
	// by their callers.
	cfg.Goroutines = 2
	in := startInstance(t, cfg)
	in.start(t)
	watched := watchRedis(t, srv)
	for range pausesPerInstance {
		time.Sleep(pauseGapMin + rand.N(pauseGapSpread))
		srv.Pause(t)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, redistest.PauseProcess(in.cmd.Process), "pausing the instance")
		srv.Resume(t)
		time.Sleep(pauseLength)
		require.NoError(t, redistest.ResumeProcess(in.cmd.Process), "resuming the instance")
	}
	reports := finishInstances(t, []*instance{in})
	auditInstances(t, cfg, reports, watched())
}
