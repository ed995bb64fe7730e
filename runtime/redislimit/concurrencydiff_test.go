package redislimit

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestConcurrencyBackendsAgree runs one random sequence of acquisitions,
// renewals, releases, resets, peeks and clock steps on a concurrency limit
// against Redis and against memlimit, on one test clock, and requires the
// same answer from both at every step: admitted or not, the permits left,
// and whether a renewal or a release found its permit lost.
func TestConcurrencyBackendsAgree(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := testclock.New()
	backends := []runtime.Holder{
		New(srv.Client(t), WithClock(clock.Now), WithFailurePolicy(FailClosed)),
		memlimit.New(memlimit.WithClock(clock.Now)),
	}
	l := runtime.Limit{Name: "conc.diff", Window: 10 * time.Second, Max: 3, Algorithm: runtime.Concurrency}
	keys := []string{"a", "b"}
	rng := rand.New(rand.NewPCG(7, 11))
	// held[i] holds each backend's Hold of one call admitted by both.
	var held [][]runtime.PermitHold
	var admitted, denied, losses int
	lost := func(err error) bool {
		require.True(t, err == nil || errors.Is(err, runtime.ErrPermitLost), "%v", err)
		if err != nil {
			losses++
		}
		return err != nil
	}
	for step := range 2000 {
		key := keys[rng.IntN(len(keys))]
		req := runtime.Request{Limit: l, Key: key}
		switch op := rng.IntN(10); {
		case op < 4:
			var allowed []bool
			var hs []runtime.PermitHold
			for _, b := range backends {
				ds, h, err := b.Hold(ctx, req)
				require.NoError(t, err)
				allowed = append(allowed, ds.Allowed)
				if ds.Allowed {
					hs = append(hs, h.(runtime.PermitHold))
				}
			}
			require.Equal(t, allowed[0], allowed[1], "step %d: admitted", step)
			if allowed[0] {
				held = append(held, hs)
				admitted++
			} else {
				denied++
			}
		case op < 6 && len(held) > 0:
			i := rng.IntN(len(held))
			require.Equal(t, lost(held[i][0].Settle(ctx, 1)), lost(held[i][1].Settle(ctx, 1)), "step %d: release found its permit lost", step)
			held = append(held[:i], held[i+1:]...)
		case op < 8 && len(held) > 0:
			i := rng.IntN(len(held))
			require.Equal(t, lost(held[i][0].Renew(ctx)), lost(held[i][1].Renew(ctx)), "step %d: renewal found its permit lost", step)
		case op == 8:
			var left []int
			for _, b := range backends {
				ds, err := runtime.Peek(ctx, b, req)
				require.NoError(t, err)
				left = append(left, ds.Each[0].Remaining)
			}
			require.Equal(t, left[0], left[1], "step %d: permits left", step)
		default:
			if rng.IntN(50) == 0 {
				for _, b := range backends {
					require.NoError(t, runtime.Reset(ctx, b, req))
				}
				continue
			}
			// Mostly within a lease, sometimes past it.
			clock.Advance(time.Duration(rng.Int64N(int64(6 * time.Second))))
		}
	}
	t.Logf("admitted %d, denied %d, permits found lost %d (by each backend)", admitted, denied, losses/2)
	// A sequence that never filled a key or lost a permit would prove little.
	require.Positive(t, admitted)
	require.Positive(t, denied)
	require.Positive(t, losses)
}
