package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	l := Limit{Name: "n", Window: time.Second, Max: 3}
	tb := Limit{Name: "tb", Window: time.Second, Max: 3, Algorithm: TokenBucket, Burst: 10}
	require.NoError(t, Validate(Request{Limit: l, Cost: 3}))
	require.NoError(t, Validate(Request{Limit: tb, Cost: 10}))
	require.NoError(t, Validate(Request{Limit: l, Key: "a"}, Request{Limit: l, Key: "b"}))
	for _, bad := range [][]Request{
		{{Limit: l, Cost: -1}},
		{{Limit: l, Cost: 4}},
		{{Limit: tb, Cost: 11}},
		{{Limit: l, Cost: -1 << 63}},
	} {
		require.ErrorIs(t, Validate(bad...), ErrInvalidCost, "%+v", bad)
	}
	require.Error(t, Validate())
	require.ErrorContains(t, Validate(Request{Limit: l, Key: "a"}, Request{Limit: l, Key: "a"}), "appears twice")
	require.ErrorContains(t, Validate(Request{Limit: Limit{Name: "w", Max: 1}}), "Window")
}

func TestCapacity(t *testing.T) {
	for _, a := range Algorithms() {
		l := Limit{Name: "c", Window: time.Second, Max: 5, Burst: 2, Algorithm: a}
		want := 5
		if a == TokenBucket || a == GCRA {
			want = 2
		}
		require.Equal(t, want, l.Capacity(), a)
		l.Burst = 0
		require.Equal(t, 5, l.Capacity(), a)
	}
}

func TestAlgorithmGoString(t *testing.T) {
	require.Equal(t, "runtime.GCRA", GCRA.GoString())
	require.Equal(t, "runtime.SlidingLog", SlidingLog.GoString())
	require.Equal(t, `runtime.Algorithm("x")`, Algorithm("x").GoString())
	for _, a := range Algorithms() {
		require.NotContains(t, a.GoString(), "(", "%s has no constant name", a)
	}
	require.Contains(t, fmt.Sprintf("%#v", Limit{Algorithm: TokenBucket}), "Algorithm:runtime.TokenBucket")
}

func TestDecisionsDecision(t *testing.T) {
	ds := Decisions{Each: []Decision{
		{Allowed: true, Remaining: 4, ResetAfter: time.Minute},
		{Remaining: 0, RetryAfter: time.Second, ResetAfter: time.Second},
		{Remaining: 2, RetryAfter: 3 * time.Second, ResetAfter: 3 * time.Second},
	}}
	require.Equal(t, Decision{Remaining: 0, RetryAfter: 3 * time.Second, ResetAfter: time.Minute}, ds.Decision())
	require.Equal(t, Decision{Allowed: true}, Decisions{Allowed: true}.Decision())
}

// scripted is a Limiter that answers from a list, to test what Enforce and
// Wait make of each answer.
type scripted struct {
	answers []Decisions
	errs    []error
	calls   int
}

func (s *scripted) Decide(ctx context.Context, reqs ...Request) (Decisions, error) {
	i := min(s.calls, len(s.answers)-1)
	s.calls++
	var err error
	if i < len(s.errs) {
		err = s.errs[i]
	}
	return s.answers[i], err
}

func denied(retry ...time.Duration) Decisions {
	ds := Decisions{}
	for _, r := range retry {
		ds.Each = append(ds.Each, Decision{Allowed: r == 0, RetryAfter: r})
	}
	return ds
}

func TestEnforce(t *testing.T) {
	a := Limit{Name: "A", Window: time.Second, Max: 1}
	b := Limit{Name: "B", Window: time.Minute, Max: 1}
	reqs := []Request{{Limit: a}, {Limit: b}}
	ctx := context.Background()

	require.NoError(t, Enforce(ctx, &scripted{answers: []Decisions{{Allowed: true}}}, reqs...))
	require.NoError(t, Enforce(ctx, nil), "no requests: admitted without asking")

	err := Enforce(ctx, &scripted{answers: []Decisions{denied(time.Second, time.Minute)}}, reqs...)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, ErrLimited)
	require.Equal(t, "B", le.Limit.Name, "the longest wait is named")
	require.Equal(t, time.Minute, le.Decision.RetryAfter)

	// The limit that had room is not named, whatever its place.
	require.ErrorAs(t, Enforce(ctx, &scripted{answers: []Decisions{denied(0, time.Second)}}, reqs...), &le)
	require.Equal(t, "B", le.Limit.Name)

	// A Limiter that fills Decisions badly still yields a usable denial.
	for _, bad := range []Decisions{{}, {Each: []Decision{{}}}, {Each: []Decision{{Allowed: true}, {Allowed: true}}}} {
		require.ErrorAs(t, Enforce(ctx, &scripted{answers: []Decisions{bad}}, reqs...), &le)
		require.Equal(t, "A", le.Limit.Name)
		require.False(t, le.Decision.Allowed)
		require.NotEmpty(t, le.Error())
	}

	boom := errors.New("boom")
	require.Same(t, boom, Enforce(ctx, &scripted{answers: []Decisions{{}}, errs: []error{boom}}, reqs...))
}

func TestWait(t *testing.T) {
	l := Limit{Name: "A", Window: time.Second, Max: 1}
	ctx := context.Background()

	s := &scripted{answers: []Decisions{denied(time.Millisecond), denied(2 * time.Millisecond), {Allowed: true}}}
	require.NoError(t, Wait(ctx, s, 3*time.Millisecond, Request{Limit: l}))
	require.Equal(t, 3, s.calls, "asked again after each wait")

	// The next wait would exceed max: the denial comes back without a sleep.
	s = &scripted{answers: []Decisions{denied(time.Millisecond), denied(time.Hour)}}
	var le *LimitError
	require.ErrorAs(t, Wait(ctx, s, time.Minute, Request{Limit: l}), &le)
	require.Equal(t, time.Hour, le.Decision.RetryAfter)
	require.Equal(t, 2, s.calls)

	// A wait past the context's deadline is not started.
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s = &scripted{answers: []Decisions{denied(time.Hour)}}
	require.ErrorAs(t, Wait(dctx, s, 2*time.Hour, Request{Limit: l}), &le)
	require.Equal(t, 1, s.calls)

	// A context cancelled during the wait ends it with its error.
	cctx, cancelNow := context.WithCancel(ctx)
	s = &scripted{answers: []Decisions{denied(time.Hour)}}
	go cancelNow()
	require.ErrorIs(t, Wait(cctx, s, 2*time.Hour, Request{Limit: l}), context.Canceled)

	// Errors are returned as they are; no requests admit without asking.
	boom := errors.New("boom")
	require.Same(t, boom, Wait(ctx, &scripted{answers: []Decisions{{}}, errs: []error{boom}}, time.Second, Request{Limit: l}))
	require.NoError(t, Wait(ctx, nil, time.Second))
}

func TestPlainRequestAgreesWithValidate(t *testing.T) {
	// plainRequest lets calls skip Limit.Validate; it may only do so for
	// calls that Validate and the cost checks accept.
	windows := []time.Duration{0, time.Nanosecond, time.Microsecond, time.Second, time.Hour, 24 * time.Hour,
		365 * 24 * time.Hour, 1 << 62, -time.Second}
	ints := []int{-1, 0, 1, 2, 10, 1000, 1 << 20, 1 << 26}
	// Where int has 64 bits (the three wrap on 32-bit platforms).
	for _, n := range []int64{1 << 40, 1 << 52, 1<<62 - 1} {
		if int64(int(n)) == n {
			ints = append(ints, int(n))
		}
	}
	algos := append(Algorithms(), "", "nope")
	checked := 0
	for _, w := range windows {
		for _, maxN := range ints {
			for _, burst := range ints {
				for _, algo := range algos {
					for _, n := range []int{0, 1, 2, maxN, burst, maxN + 1} {
						for _, name := range []string{"", "x"} {
							l := Limit{Name: name, Window: w, Max: maxN, Burst: burst, Algorithm: algo}
							if !plainRequest(&l, int64(n)) {
								continue
							}
							checked++
							require.NoError(t, l.Validate(), "%+v", l)
							require.True(t, n >= 1 && n <= l.Capacity(), "%+v cost %d", l, n)
						}
					}
				}
			}
		}
	}
	require.Greater(t, checked, 1000)
}
