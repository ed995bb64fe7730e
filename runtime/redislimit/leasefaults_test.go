package redislimit

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Bounds for waiting on Redis's clock; they only decide when to give up.
const leaseWaitBound = 30 * time.Second

// redisNow returns Redis's time in µs.
func redisNow(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	tm, err := c.Time(context.Background()).Result()
	require.NoError(t, err)
	return tm.UnixMicro()
}

// waitRedisPast waits until Redis's time passes us.
func waitRedisPast(t *testing.T, c *redis.Client, us int64) {
	t.Helper()
	deadline := time.Now().Add(leaseWaitBound)
	for redisNow(t, c) <= us {
		if time.Now().After(deadline) {
			t.Fatalf("Redis's time did not pass %d µs within %v", us, leaseWaitBound)
		}
		time.Sleep(time.Millisecond)
	}
}

// drainCost is the units of each call of drain: a call may take up to
// drainCost of l's intervals, as on a loaded machine, before l refills
// faster than drain takes.
const drainCost = 10

// drain decides l on key per call of drainCost units until a call is
// denied, and returns the units admitted; l must refill slower than
// drainCost units per call.
func drain(t *testing.T, lim *Limiter, l runtime.Limit, key string) []admitted {
	t.Helper()
	var out []admitted
	for range 100 * burstOf(l) / drainCost {
		lo := time.Now().UnixMicro()
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: key, Cost: drainCost})
		hi := time.Now().UnixMicro()
		require.NoError(t, err)
		if !ds.Allowed {
			return out
		}
		for range drainCost {
			out = append(out, admitted{lo, hi})
		}
	}
	t.Fatalf("%d units in a row admitted: the limit refills faster than this test calls", len(out))
	return nil
}

// leasedState reads a GCRA key's state: the units it says are leased out
// and until when (0, 0 for a key with none).
func leasedState(t *testing.T, c *redis.Client, key string) (held, until int64) {
	t.Helper()
	raw, err := c.Get(context.Background(), key).Result()
	if err == redis.Nil {
		return 0, 0
	}
	require.NoError(t, err)
	f := strings.Split(raw, ":")
	if len(f) != 3 {
		return 0, 0
	}
	held, err = strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	until, err = strconv.ParseInt(f[2], 10, 64)
	require.NoError(t, err)
	return held, until
}

// TestLeaseOfKilledInstance kills (SIGKILL) an instance, a process of its
// own, while it holds leases on a GCRA key. The key's state then says units are out, until at most a lease's
// life (10 periods) after the kill. Another limiter, deciding per call,
// drains the key at once, and again once the leases have ended and the
// bucket had time to refill: every admission, the dead instance's
// included, stays within the bound, and the second drain finds the whole
// burst again, so the dead instance stranded its units only until its
// leases ended.
func TestLeaseOfKilledInstance(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	const period = 20 * time.Millisecond
	l := runtime.Limit{Name: "lease.kill", Window: time.Second, Max: 1000, Burst: 1000, Algorithm: runtime.GCRA}
	// Each call is leaseMinUnits*2 units, so that any period with a call
	// in it makes the key hot at the instance, however slowly a loaded
	// machine lets it call.
	a := startLeaseInstance(t, leaseInstanceConfig{Addr: srv.Addr(), Limit: l, Period: period, Instances: 2, Goroutines: 1,
		Busy: time.Millisecond, Idle: 9 * time.Millisecond, Cost: 2 * leaseMinUnits})
	a.start(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	key := lim.storageKey(l, "hot")

	// Kill it once it holds leases.
	deadline := time.Now().Add(leaseWaitBound)
	for {
		if held, _ := leasedState(t, admin, key); held > 0 && a.lineCount.Load() > 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instance took no lease within %v: %s", leaseWaitBound, a.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	<-a.exited
	killed := redisNow(t, admin)
	held, until := leasedState(t, admin, key)
	require.Positive(t, held, "units out when the instance died")
	require.LessOrEqual(t, until, killed+(leaseLifePeriods*period).Microseconds(), "a lease outlives its life")

	all := a.admissions()
	all = append(all, drain(t, lim, l, "hot")...)
	drained := redisNow(t, admin)
	// Past the leases' end and the drain's, whichever is later, by long
	// enough to refill the burst (1000 intervals of 1ms).
	waitRedisPast(t, admin, max(until, drained)+int64(burstOf(l))*1000+10_000)
	second := drain(t, lim, l, "hot")
	all = append(all, second...)
	require.Empty(t, auditAdmissions(l, all))
	require.GreaterOrEqual(t, int64(len(second)), burstOf(l), "the burst is back once the dead instance's leases ended")
	held, _ = leasedState(t, admin, key)
	require.Zero(t, held)
}

// TestLeasesWhileRedisIsDown freezes Redis (SIGSTOP) while a limiter holds
// leases on a key it is hot on, with FailClosed, and calls slow down: the
// leases in hand are spent only until their life ends, and from then on nothing is admitted
// (the policy) until Redis answers. Redis is then killed and started
// anew, empty, and the limiter leases again. Every admission stays within
// the bound: before the freeze, during it, and after the restart (a fresh
// key: the restart forgot the counts, as any Redis restart does).
func TestLeasesWhileRedisIsDown(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	const period = 20 * time.Millisecond
	l := runtime.Limit{Name: "lease.down", Window: time.Second, Max: 20000, Burst: 1000, Algorithm: runtime.GCRA}
	lim := New(srv.Client(t), WithLeases(period), WithInstances(1), WithFailurePolicy(FailClosed), WithTimeout(50*time.Millisecond), WithRetryInterval(20*time.Millisecond))

	var (
		mu       sync.Mutex
		before   []admitted
		frozen   []admitted
		leasedAt []int64 // the lo of each admission from a lease while frozen
		errs     int
		phase    int // 0 before the freeze, 1 frozen, 2 after the restart
		after    []admitted
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lo := time.Now().UnixMicro()
				ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "hot"})
				hi := time.Now().UnixMicro()
				mu.Lock()
				switch {
				case err != nil:
					errs++
				case ds.Allowed && phase == 0:
					before = append(before, admitted{lo, hi})
				case ds.Allowed && phase == 1:
					frozen = append(frozen, admitted{lo, hi})
					if ds.Source == runtime.SourceLease {
						leasedAt = append(leasedAt, lo)
					}
				case ds.Allowed:
					after = append(after, admitted{lo, hi})
				}
				slow := phase == 1
				mu.Unlock()
				if slow {
					// Demand drops while Redis is frozen: the leases in
					// hand would last longer than their life.
					time.Sleep(20 * time.Millisecond)
				} else {
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	key := lim.storageKey(l, "hot")
	deadline := time.Now().Add(leaseWaitBound)
	for {
		// Warm (leases sized to the key's rate here), and holding a lease
		// that the slower calls below cannot use up within its life.
		mu.Lock()
		warm := len(before) >= 2000
		mu.Unlock()
		if held, _ := leasedState(t, admin, key); held > 0 && warm && leftInHand(lim) >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lease within %v", leaseWaitBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	phase = 1
	mu.Unlock()
	srv.Pause(t)
	frozenAt := time.Now().UnixMicro()

	// Several lives of a lease.
	time.Sleep(3 * leaseLifePeriods * period)
	mu.Lock()
	phase = 2
	mu.Unlock()
	srv.Stop(t)
	srv.Start(t)
	// Decide on the restarted Redis for at least 200ms and until it
	// admitted leaseRunDecisions units, however slowly a loaded machine
	// lets the goroutines call.
	restarted := time.Now()
	time.Sleep(200 * time.Millisecond)
	for {
		mu.Lock()
		n := len(after)
		mu.Unlock()
		if n >= leaseRunDecisions {
			break
		}
		if time.Since(restarted) > leaseRunBound {
			t.Fatalf("%d units admitted within %v of Redis's restart, short of %d", n, leaseRunBound, leaseRunDecisions)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	life := (leaseLifePeriods * period).Microseconds()
	for _, a := range frozen {
		require.Less(t, a.lo, frozenAt+life, "admitted while Redis was frozen, past the life of every lease")
	}
	require.NotEmpty(t, leasedAt, "admissions from leases while Redis was frozen")
	require.Positive(t, errs, "decisions the policy made")
	require.Empty(t, auditAdmissions(l, append(before, frozen...)))
	require.Empty(t, auditAdmissions(l, after))
	require.NotEmpty(t, after, "admissions once Redis is back")
}

// leftInHand returns the units left in the leases lim uses now.
func leftInHand(lim *Limiter) int64 {
	n := int64(0)
	lim.leases.holders.Range(func(_, v any) bool {
		if l := v.(*holder).cur.Load(); l != nil {
			n += l.left.Load()
		}
		return true
	})
	return n
}
