package runtime

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A bound is a Limit with its numbers as int64, so that the table of
// TestLimitBounds compiles where int has 32 bits.
type bound struct {
	window     time.Duration
	max, burst int64
	algo       Algorithm
}

// limit returns b as a Limit, and whether its numbers fit in an int.
func (b bound) limit() (Limit, bool) {
	l := Limit{Name: "Bounds.Limit", Window: b.window, Max: int(b.max), Burst: int(b.burst), Algorithm: b.algo}
	return l, int64(l.Max) == b.max && int64(l.Burst) == b.burst
}

// TestLimitBounds checks that Validate accepts each bound Limit states and
// refuses one past it, with an error that names the limit and the bound
// and never a key; and that plainRequest, which lets calls skip Validate,
// never vouches for a limit past a bound.
func TestLimitBounds(t *testing.T) {
	const µs = time.Microsecond
	day := 24 * time.Hour
	for _, c := range []struct {
		ok, over bound
		want     string // in over's error
	}{
		{
			bound{time.Hour, MaxSlidingLog, 0, ""},
			bound{time.Hour, MaxSlidingLog + 1, 0, ""},
			"can be at most 1000000, which bounds a key's memory; use SlidingWindow",
		},
		{
			bound{time.Hour, MaxSlidingLog, 0, SlidingLog},
			bound{time.Hour, MaxUnits, 0, SlidingLog},
			"can be at most 1000000",
		},
		{
			bound{time.Hour, MaxUnits, 0, SlidingWindow},
			bound{time.Hour, MaxUnits + 1, 0, SlidingWindow},
			"has Max 4503599627370497; it can be at most 2^52 (4503599627370496)",
		},
		{
			bound{time.Hour, MaxUnits, 0, FixedWindow},
			bound{time.Hour, math.MaxInt64, 0, FixedWindow},
			"use ModeOff",
		},
		{
			bound{µs, 1, MaxUnits, TokenBucket},
			bound{µs, 1, MaxUnits + 1, TokenBucket},
			"has Burst 4503599627370497; it can be at most 2^52",
		},
		{
			bound{µs, 1, MaxUnits / 2, GCRA},
			bound{µs, 1, MaxUnits/2 + 1, GCRA},
			"beyond the 2^52 µs it counts exactly",
		},
		{
			bound{1 << 52 * µs, 1, 0, FixedWindow},
			bound{(1<<52 + 1) * µs, 1, 0, FixedWindow},
			"use a shorter Window",
		},
		{
			bound{1 << 52 * µs, 1, 0, ""},
			bound{(1<<52 + 1) * µs, 1, 0, ""},
			"use a shorter Window",
		},
		{
			bound{4_094_181_479_427_720 * µs, 1, 0, SlidingWindow},
			bound{4_094_181_479_427_721 * µs, 1, 0, SlidingWindow},
			"use a shorter Window",
		},
		{
			bound{day, 1, 52_124, TokenBucket},
			bound{day, 1, 52_125, TokenBucket},
			"times Burst 52125 is too large to count exactly",
		},
		{
			bound{1 << 51 * µs, 1, 0, GCRA},
			bound{(1<<51 + 1) * µs, 1, 0, GCRA},
			"use a shorter Window",
		},
	} {
		ok, okFits := c.ok.limit()
		over, overFits := c.over.limit()
		if !okFits || !overFits {
			continue // beyond int on this platform
		}
		require.NoError(t, ok.Validate(), "%+v", ok)
		require.NoError(t, Validate(Request{Limit: ok, Key: "someone@example.com", Cost: int64(ok.Capacity())}), "%+v at its capacity", ok)
		err := over.Validate()
		require.ErrorContains(t, err, c.want, "%+v", over)
		require.ErrorContains(t, err, `"Bounds.Limit"`)
		require.True(t, strings.HasPrefix(err.Error(), "ratelimit: "), err.Error())
		rerr := Validate(Request{Limit: over, Key: "someone@example.com"})
		require.EqualError(t, rerr, err.Error())
		require.NotContains(t, rerr.Error(), "someone@example.com")
		require.False(t, errors.Is(rerr, ErrInvalidCost), "a limit beyond a bound is not a cost error")
		for _, n := range []int64{1, int64(min(over.Capacity(), MaxSlidingLog))} {
			require.False(t, plainRequest(&over, n), "plainRequest vouches for %+v", over)
		}
	}

	// A cost beyond a sliding log's bound is beyond its capacity.
	l := Limit{Name: "Bounds.Cost", Window: time.Hour, Max: MaxSlidingLog}
	err := Validate(Request{Limit: l, Key: "someone@example.com", Cost: MaxSlidingLog + 1})
	require.ErrorIs(t, err, ErrInvalidCost)
	require.ErrorContains(t, err, "capacity (1000000)")
}
