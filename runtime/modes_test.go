package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
)

// modeModel is the rule Limiter.Decide states for modes, on a clock that
// stands still so that every algorithm is a count against its capacity:
// a call is admitted when every enforced limit has room; an admitted call
// is recorded by its enforced limits and by the shadow limits that had
// room; an off limit is never consulted.
type modeModel struct{ used map[string]int }

func (m *modeModel) decide(reqs []Request) (allowed bool, room []bool) {
	room = make([]bool, len(reqs))
	allowed = true
	for i, r := range reqs {
		if r.Limit.Mode == ModeOff {
			room[i] = true
			continue
		}
		room[i] = m.used[r.Limit.Name+"\x00"+r.Key]+int(r.cost()) <= r.Limit.Capacity()
		allowed = allowed && (room[i] || r.Limit.Mode != ModeEnforce)
	}
	if allowed {
		for i, r := range reqs {
			if r.Limit.Mode != ModeOff && room[i] {
				m.used[r.Limit.Name+"\x00"+r.Key] += int(r.cost())
			}
		}
	}
	return allowed, room
}

// TestModesEveryMix decides random calls under every mix of modes of three
// limits, with costs above 1 and two keys, through a MemoryLimiter's Decide,
// through Operate's and through Enforce, and expects the model's verdicts
// from all three and the same Decisions from the first two. It then checks
// what each limit recorded by asking it, enforced, for the rest of its room.
func TestModesEveryMix(t *testing.T) {
	ctx := context.Background()
	modes := []Mode{ModeEnforce, ModeShadow, ModeOff}
	for _, algo := range []Algorithm{SlidingLog, SlidingWindow, FixedWindow, TokenBucket, GCRA} {
		for mix := range len(modes) * len(modes) * len(modes) {
			ms := []Mode{modes[mix%3], modes[mix/3%3], modes[mix/9]}
			t.Run(fmt.Sprintf("%s/%v-%v-%v", algo, ms[0], ms[1], ms[2]), func(t *testing.T) {
				limits := make([]Limit, len(ms))
				for i, m := range ms {
					limits[i] = Limit{Name: fmt.Sprintf("Mix.L%d", i), Window: time.Hour, Max: 3 + 2*i, Algorithm: algo, Mode: m}
				}
				clock := testclock.New()
				direct := NewMemoryLimiter(WithClock(clock.Now))
				operated := Operate(NewMemoryLimiter(WithClock(clock.Now)))
				enforced := NewMemoryLimiter(WithClock(clock.Now))
				model := &modeModel{used: map[string]int{}}
				rng := rand.New(rand.NewPCG(uint64(mix), uint64(len(algo))))
				for call := range 40 {
					var reqs []Request
					for i, l := range limits {
						if rng.IntN(3) == 0 && len(reqs) > 0 {
							continue // not every call passes every limit
						}
						reqs = append(reqs, Request{Limit: l, Key: fmt.Sprintf("k%d", rng.IntN(2)), Cost: int64(1 + rng.IntN(2)*i)})
					}
					wantAllowed, wantRoom := model.decide(reqs)

					ds, err := direct.Decide(ctx, reqs...)
					require.NoError(t, err)
					require.Equal(t, wantAllowed, ds.Allowed, "call %d", call)
					require.Len(t, ds.Each, len(reqs))
					for i, d := range ds.Each {
						require.Equal(t, wantRoom[i], d.Allowed, "call %d, %s", call, reqs[i].Limit.Name)
						if reqs[i].Limit.Mode == ModeOff {
							require.Equal(t, Decision{Allowed: true, Remaining: reqs[i].Limit.Capacity()}, d)
						}
					}
					ods, err := operated.Decide(ctx, reqs...)
					require.NoError(t, err)
					require.Equal(t, ds, ods, "call %d: Operate decides as the limiter it wraps", call)

					err = Enforce(ctx, enforced, reqs...)
					if wantAllowed {
						require.NoError(t, err, "call %d", call)
					} else {
						var le *LimitError
						require.ErrorAs(t, err, &le, "call %d", call)
						require.Equal(t, ModeEnforce, le.Limit.Mode, "only an enforced limit denies")
					}
				}
				for _, lim := range []Limiter{direct, operated, enforced} {
					for _, l := range limits {
						for _, key := range []string{"k0", "k1"} {
							probe := l
							probe.Mode = ModeEnforce
							left := 0
							for ; left <= probe.Capacity(); left++ {
								ds, err := lim.Decide(ctx, Request{Limit: probe, Key: key})
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
	Limiter
	calls int
}

func (c *countingLimiter) Decide(ctx context.Context, reqs ...Request) (Decisions, error) {
	c.calls++
	return c.Limiter.Decide(ctx, reqs...)
}

// TestWrapperSeesEveryCall: a wrapper that overrides Decide is asked once
// per call, whatever the modes, by Enforce and by Wait, and a shadow limit
// behind it never denies.
func TestWrapperSeesEveryCall(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New()
	w := &countingLimiter{Limiter: NewMemoryLimiter(WithClock(clock.Now))}
	shadow := Limit{Name: "Wrap.Shadow", Window: time.Hour, Max: 1, Mode: ModeShadow}
	off := Limit{Name: "Wrap.Off", Window: time.Hour, Max: 1, Mode: ModeOff}
	enforced := Limit{Name: "Wrap.Enforced", Window: time.Hour, Max: 3}
	for range 3 {
		require.NoError(t, Enforce(ctx, w, Request{Limit: shadow, Key: "k"}, Request{Limit: off, Key: "k"}, Request{Limit: enforced, Key: "k"}))
	}
	require.ErrorIs(t, Wait(ctx, w, 0, Request{Limit: shadow, Key: "k"}, Request{Limit: enforced, Key: "k"}), ErrLimited)
	require.Equal(t, 4, w.calls)
}

// TestUnknownModeIsInvalid: a Mode beyond ModeOff is a caller bug on every
// path, the one-request path included.
func TestUnknownModeIsInvalid(t *testing.T) {
	ctx := context.Background()
	mem := NewMemoryLimiter()
	bad := Limit{Name: "Bad.Mode", Window: time.Minute, Max: 1, Mode: ModeOff + 1}
	_, err := mem.Decide(ctx, Request{Limit: bad, Key: "k"})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrLimited))
	_, err = mem.Decide(ctx, Request{Limit: bad, Key: "k"}, Request{Limit: Limit{Name: "Ok", Window: time.Minute, Max: 1}, Key: "k"})
	require.Error(t, err)
}
