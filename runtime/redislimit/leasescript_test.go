package redislimit

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// simLease is a lease as a simulated instance holds it.
type simLease struct {
	id, left, ends int64
}

// TestLeaseScriptAudit runs, on a real Redis and the test's clock, a seeded
// random history on one key of each leasing algorithm: per-call decisions,
// and three simulated instances that take leases, admit from them until
// they end, release them (alone or with their next grant) or abandon them.
// Every unit admitted, per call or from a lease, is logged at its time, and
// the audit checks the algorithm's bound over the whole history. Releases
// put back the units not used, so a refund that the refill cap did not
// bound (GCRA, the token bucket) or that reached a window the lease was
// not charged to (fixed and sliding windows) would show as a breach.
func TestLeaseScriptAudit(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	for _, algo := range leasingAlgorithms {
		t.Run(string(algo), func(t *testing.T) {
			clock := newFakeClock()
			lim := New(client, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
			l := runtime.Limit{Name: "lease.audit." + string(algo), Window: time.Second, Max: 40, Burst: 16, Algorithm: algo}
			var a ask
			resolveLimit(&a, &runtime.Request{Limit: l})
			key := lim.storageKey(l, "k")
			now := func() int64 { return clock.Now().UnixMicro() }
			rng := rand.New(rand.NewPCG(7, uint64(len(algo))))

			var (
				admitted  []admitted
				granted   int64
				held      [3][]simLease
				nextID    int64 = 1
				releases  [3][][2]int64
				leaseUsed int64
			)
			ask := func(inst int, want int64) leaseReply {
				la := leaseAsk{key: key, code: a.code, window: a.window, max: a.max, burst: a.burst, now: now(),
					want: want, life: rng.Int64N(2_000_000) + 1000, id: nextID, release: releases[inst]}
				releases[inst] = nil
				rep, err := lim.lease(ctx, &la)
				require.NoError(t, err)
				require.LessOrEqual(t, rep.granted, want)
				if rep.granted > 0 {
					granted += rep.granted
					held[inst] = append(held[inst], simLease{id: nextID, left: rep.granted, ends: la.now + rep.life})
					require.LessOrEqual(t, rep.life, la.life)
				}
				nextID++
				return rep
			}
			for range 6000 {
				inst := rng.IntN(3)
				switch op := rng.IntN(100); {
				case op < 27:
					clock.Advance(time.Duration(rng.Int64N(25_000)) * time.Microsecond)
				case op < 30:
					// Long enough for a bucket to fill up while leases
					// are out.
					clock.Advance(time.Duration(rng.Int64N(900_000)) * time.Microsecond)
				case op < 50:
					// Per-call calls until one is denied.
					for range 50 {
						d, err := lim.Allow(ctx, l, "k")
						require.NoError(t, err)
						if !d.Allowed {
							break
						}
						admitted = append(admitted, at(now()))
					}
				case op < 62:
					if len(held[inst]) < 2 {
						ask(inst, rng.Int64N(12)+1)
					}
				case op < 85:
					for i := range held[inst] {
						s := &held[inst][i]
						if now() < s.ends && s.left > 0 {
							n := rng.Int64N(s.left) + 1
							s.left -= n
							leaseUsed += n
							for range n {
								admitted = append(admitted, at(now()))
							}
							break
						}
					}
				case op < 95:
					// Done with the first lease: released with the next
					// grant, or alone.
					if len(held[inst]) > 0 {
						s := held[inst][0]
						held[inst] = held[inst][1:]
						releases[inst] = append(releases[inst], [2]int64{s.id, s.left})
						if rng.IntN(2) == 0 {
							ask(inst, 0)
						}
					}
				default:
					// An instance that dies holding its leases.
					held[inst] = nil
					releases[inst] = nil
				}
			}
			require.Empty(t, auditAdmissions(l, admitted))
			require.LessOrEqual(t, leaseUsed, granted)
			// The history exercised what it audits.
			require.Greater(t, leaseUsed, int64(40), "units admitted from leases")
			require.Greater(t, len(admitted)-int(leaseUsed), 50, "units admitted per call")
		})
	}
}
