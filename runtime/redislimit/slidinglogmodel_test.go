package redislimit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestSlidingLogModel walks random calls (costs 1 to Max, several keys, the
// clock moving on the window's scale, past it, and back) through Redis, the
// memory limiter and refLog, the model written from the documentation, and
// requires all three to agree on every decision: allowed, remaining, the
// wait for room and for the log to empty; the ring in Redis must hold the
// model's units after each. refLog drops the units that
// stopped counting at each decision, so after the clock steps back they
// stay dropped, as both backends drop them. The sizes cover both ways the
// script reads a log (whole up to Max 128, in place above), a ring that
// grows, wraps, and shrinks back to what counts, and costs written in
// several SETRANGEs (above 4,096 units).
func TestSlidingLogModel(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	for _, max := range []int{1, 5, 128, 129, 700, 9000} {
		t.Run(fmt.Sprint("Max ", max), func(t *testing.T) {
			clock := newFakeClock()
			red := New(c, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
			mem := memlimit.New(memlimit.WithClock(clock.Now))
			l := runtime.Limit{Name: fmt.Sprint("Model.Log", max), Window: time.Minute + 7*time.Microsecond, Max: max}
			w := l.Window.Microseconds()
			keys := []string{"a", "b", "c"}
			models := map[string]refModel{}
			for _, k := range keys {
				models[k] = newRefModel(l)
			}
			rng := rand.New(rand.NewPCG(uint64(max), 34))
			steps := 1500
			if max > 128 {
				steps = 600
			}
			if max > 4096 {
				steps = 300
			}
			admitted, denied := 0, 0
			for step := range steps {
				switch r := rng.Float64(); {
				case r < 0.35:
					// Several calls in one microsecond.
				case r < 0.75:
					clock.Advance(us(rng.Int64N(w/int64(max) + 1)))
				case r < 0.9:
					clock.Advance(us(rng.Int64N(w / 3)))
				case r < 0.95:
					clock.Advance(us(w + rng.Int64N(w)))
				default:
					clock.Advance(-us(rng.Int64N(w / 2)))
				}
				key := keys[rng.IntN(len(keys))]
				cost := int64(1)
				if rng.IntN(3) == 0 {
					cost = 1 + rng.Int64N(int64(max))
				}
				if step < len(keys) {
					// Each key's first call fills its log: a new key's
					// largest write.
					key, cost = keys[step], int64(max)
				}
				want := models[key].decide(clock.Now().UnixMicro(), cost)
				if want.Allowed {
					admitted++
				} else {
					denied++
				}
				for _, b := range []struct {
					name string
					lim  runtime.Limiter
				}{{"redis", red}, {"memory", mem}} {
					ds, err := b.lim.Decide(ctx, runtime.Request{Limit: l, Key: key, Cost: cost})
					require.NoError(t, err)
					require.Equal(t, want, ds.Each[0], "step %d, %s, key %s, cost %d at %d", step, b.name, key, cost, clock.Now().UnixMicro())
					require.Equal(t, want.Allowed, ds.Allowed)
				}
				// Both drop what stopped counting at each decision, so the
				// ring holds exactly the model's units.
				units := models[key].(*refLog).units
				v, err := c.Get(ctx, storageKeyOf(l, key)).Result()
				if errors.Is(err, redis.Nil) {
					require.Empty(t, units, "step %d: no log, yet units count", step)
				} else {
					require.NoError(t, err)
					require.Equal(t, units, logEntries(t, v), "step %d: the ring holds the model's units", step)
				}
			}
			t.Logf("Max %d: %d admitted, %d denied", max, admitted, denied)
			require.Greater(t, admitted, steps/10)
			require.Greater(t, denied, steps/10)
		})
	}
}

// TestSlidingLogMaxChanges walks one set of keys through limits of the same
// name whose Max changes on the way (an override, a plan change), across
// the size where the script switches between reading a log whole and in
// place, and below what the log holds: Redis, the memory limiter and
// refLog, which keeps its units whatever the Max, must agree on every
// decision, and the ring must hold the model's units.
func TestSlidingLogMaxChanges(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	clock := newFakeClock()
	red := New(c, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second), WithDenyCache(0))
	mem := memlimit.New(memlimit.WithClock(clock.Now))
	window := time.Minute
	w := window.Microseconds()
	keys := []string{"a", "b"}
	models := map[string]*refLog{}
	for _, k := range keys {
		models[k] = &refLog{}
	}
	rng := rand.New(rand.NewPCG(7, 128))
	// Three calls in one microsecond leave a ring of 3 entries in 4 slots,
	// which a Max of 10 then reads whole; then random walks.
	for _, phase := range []struct{ max, steps int }{{200, 3}, {10, 3}, {100, 150}, {300, 150}, {50, 150},
		{128, 150}, {129, 150}, {2000, 150}, {20, 150}, {700, 150}} {
		max := phase.max
		l := runtime.Limit{Name: "Model.MaxChanges", Window: window, Max: max}
		for step := range phase.steps {
			key, cost := keys[0], int64(1)
			if phase.steps > 3 {
				if rng.IntN(2) == 0 {
					clock.Advance(us(rng.Int64N(w/50 + 1)))
				}
				key = keys[rng.IntN(len(keys))]
				if rng.IntN(4) == 0 {
					cost = 1 + rng.Int64N(int64(max))
				}
			}
			m := models[key]
			m.p = refParams{w: w, max: int64(max), burst: int64(max)}
			want := m.decide(clock.Now().UnixMicro(), cost)
			for _, b := range []struct {
				name string
				lim  runtime.Limiter
			}{{"redis", red}, {"memory", mem}} {
				ds, err := b.lim.Decide(ctx, runtime.Request{Limit: l, Key: key, Cost: cost})
				require.NoError(t, err)
				require.Equal(t, want, ds.Each[0], "Max %d step %d, %s, key %s, cost %d", max, step, b.name, key, cost)
			}
			v, err := c.Get(ctx, storageKeyOf(l, key)).Result()
			if errors.Is(err, redis.Nil) {
				require.Empty(t, m.units, "Max %d step %d: no log, yet units count", max, step)
			} else {
				require.NoError(t, err)
				require.Equal(t, m.units, logEntries(t, v), "Max %d step %d: the ring holds the model's units", max, step)
			}
		}
	}
}
