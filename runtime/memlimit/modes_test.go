package memlimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// modeModel is the rule Limiter.Decide states for modes, on a clock that
// stands still so that every algorithm is a count against its capacity:
// a call is admitted when every enforced limit has room; an admitted call
// is recorded by its enforced limits and by the shadow limits that had
// room; an off limit is never consulted.
type modeModel struct{ used map[string]int }

func (m *modeModel) decide(reqs []runtime.Request) (allowed bool, room []bool) {
	room = make([]bool, len(reqs))
	allowed = true
	for i, r := range reqs {
		if r.Limit.Mode == runtime.ModeOff {
			room[i] = true
			continue
		}
		room[i] = m.used[r.Limit.Name+"\x00"+r.Key]+int(costOf(r)) <= r.Limit.Capacity()
		allowed = allowed && (room[i] || r.Limit.Mode != runtime.ModeEnforce)
	}
	if allowed {
		for i, r := range reqs {
			if r.Limit.Mode != runtime.ModeOff && room[i] {
				m.used[r.Limit.Name+"\x00"+r.Key] += int(costOf(r))
			}
		}
	}
	return allowed, room
}

// TestModesEveryMix decides random calls under every mix of modes of three
// limits, with costs above 1 and two keys, through Limiter.Decide,
// through Operate's and through Enforce, and expects the model's verdicts
// from all three and the same Decisions from the first two. It then checks
// what each limit recorded by asking it, enforced, for the rest of its room.
func TestModesEveryMix(t *testing.T) {
	ctx := context.Background()
	modes := []runtime.Mode{runtime.ModeEnforce, runtime.ModeShadow, runtime.ModeOff}
	for _, algo := range []runtime.Algorithm{runtime.SlidingLog, runtime.SlidingWindow, runtime.FixedWindow, runtime.TokenBucket, runtime.GCRA} {
		for mix := range len(modes) * len(modes) * len(modes) {
			ms := []runtime.Mode{modes[mix%3], modes[mix/3%3], modes[mix/9]}
			t.Run(fmt.Sprintf("%s/%v-%v-%v", algo, ms[0], ms[1], ms[2]), func(t *testing.T) {
				limits := make([]runtime.Limit, len(ms))
				for i, m := range ms {
					limits[i] = runtime.Limit{Name: fmt.Sprintf("Mix.L%d", i), Window: time.Hour, Max: 3 + 2*i, Algorithm: algo, Mode: m}
				}
				clock := testclock.New()
				direct := New(WithClock(clock.Now))
				operated := runtime.Operate(New(WithClock(clock.Now)))
				enforced := New(WithClock(clock.Now))
				model := &modeModel{used: map[string]int{}}
				rng := rand.New(rand.NewPCG(uint64(mix), uint64(len(algo))))
				for call := range 40 {
					var reqs []runtime.Request
					for i, l := range limits {
						if rng.IntN(3) == 0 && len(reqs) > 0 {
							continue // not every call passes every limit
						}
						reqs = append(reqs, runtime.Request{Limit: l, Key: fmt.Sprintf("k%d", rng.IntN(2)), Cost: int64(1 + rng.IntN(2)*i)})
					}
					wantAllowed, wantRoom := model.decide(reqs)

					ds, err := direct.Decide(ctx, reqs...)
					require.NoError(t, err)
					require.Equal(t, wantAllowed, ds.Allowed, "call %d", call)
					require.Len(t, ds.Each, len(reqs))
					for i, d := range ds.Each {
						require.Equal(t, wantRoom[i], d.Allowed, "call %d, %s", call, reqs[i].Limit.Name)
						if reqs[i].Limit.Mode == runtime.ModeOff {
							require.Equal(t, runtime.Decision{Allowed: true, Remaining: reqs[i].Limit.Capacity()}, d)
						}
					}
					ods, err := operated.Decide(ctx, reqs...)
					require.NoError(t, err)
					require.Equal(t, ds, ods, "call %d: runtime.Operate decides as the limiter it wraps", call)

					err = runtime.Enforce(ctx, enforced, reqs...)
					if wantAllowed {
						require.NoError(t, err, "call %d", call)
					} else {
						var le *runtime.LimitError
						require.ErrorAs(t, err, &le, "call %d", call)
						require.Equal(t, runtime.ModeEnforce, le.Limit.Mode, "only an enforced limit denies")
					}
				}
				for _, lim := range []runtime.Limiter{direct, operated, enforced} {
					for _, l := range limits {
						for _, key := range []string{"k0", "k1"} {
							probe := l
							probe.Mode = runtime.ModeEnforce
							left := 0
							for ; left <= probe.Capacity(); left++ {
								ds, err := lim.Decide(ctx, runtime.Request{Limit: probe, Key: key})
								require.NoError(t, err)
								if !ds.Allowed {
									break
								}
							}
							require.Equal(t, probe.Capacity()-model.used[l.Name+"\x00"+key], left, "%s %s: room left", l.Name, key)
						}
					}
				}
			})
		}
	}
}

// countingLimiter is a wrapper as a user writes one: it embeds a Limiter
// and overrides Decide.
type countingLimiter struct {
	runtime.Limiter
	calls int
}

func (c *countingLimiter) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	c.calls++
	return c.Limiter.Decide(ctx, reqs...)
}

// TestWrapperSeesEveryCall: a wrapper that overrides Decide is asked once
// per call, whatever the modes, by Enforce and by Wait, and a shadow limit
// behind it never denies.
func TestWrapperSeesEveryCall(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New()
	w := &countingLimiter{Limiter: New(WithClock(clock.Now))}
	shadow := runtime.Limit{Name: "Wrap.Shadow", Window: time.Hour, Max: 1, Mode: runtime.ModeShadow}
	off := runtime.Limit{Name: "Wrap.Off", Window: time.Hour, Max: 1, Mode: runtime.ModeOff}
	enforced := runtime.Limit{Name: "Wrap.Enforced", Window: time.Hour, Max: 3}
	for range 3 {
		require.NoError(t, runtime.Enforce(ctx, w, runtime.Request{Limit: shadow, Key: "k"}, runtime.Request{Limit: off, Key: "k"}, runtime.Request{Limit: enforced, Key: "k"}))
	}
	require.ErrorIs(t, runtime.Wait(ctx, w, 0, runtime.Request{Limit: shadow, Key: "k"}, runtime.Request{Limit: enforced, Key: "k"}), runtime.ErrLimited)
	require.Equal(t, 4, w.calls)
}

// TestUnknownModeIsInvalid: a Mode beyond ModeOff is a caller bug on every
// path, the one-request path included.
func TestUnknownModeIsInvalid(t *testing.T) {
	ctx := context.Background()
	mem := New()
	bad := runtime.Limit{Name: "Bad.Mode", Window: time.Minute, Max: 1, Mode: runtime.ModeOff + 1}
	_, err := mem.Decide(ctx, runtime.Request{Limit: bad, Key: "k"})
	require.Error(t, err)
	require.False(t, errors.Is(err, runtime.ErrLimited))
	_, err = mem.Decide(ctx, runtime.Request{Limit: bad, Key: "k"}, runtime.Request{Limit: runtime.Limit{Name: "Ok", Window: time.Minute, Max: 1}, Key: "k"})
	require.Error(t, err)
}

// TestAllowAppliesModes: Allow is Decide for one request, modes included.
func TestAllowAppliesModes(t *testing.T) {
	ctx := context.Background()
	mem := New()
	off := runtime.Limit{Name: "Allow.Off", Window: time.Hour, Max: 1, Mode: runtime.ModeOff}
	shadow := runtime.Limit{Name: "Allow.Shadow", Window: time.Hour, Max: 1, Mode: runtime.ModeShadow}
	for range 2 {
		d, err := mem.Allow(ctx, off, "k")
		require.NoError(t, err)
		require.Equal(t, runtime.Decision{Allowed: true, Remaining: 1}, d)
	}
	require.Zero(t, mem.Len(), "an off limit is not consulted")
	d, err := mem.Allow(ctx, shadow, "k")
	require.NoError(t, err)
	require.True(t, d.Allowed)
	d, err = mem.Allow(ctx, shadow, "k")
	require.NoError(t, err)
	require.False(t, d.Allowed, "the shadow limit's own runtime.Decision says it had no room")
}
