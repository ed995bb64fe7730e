package runtime

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMemoryEvictsIdleKeys(t *testing.T) {
	clock := newFakeClock()
	lim := NewMemoryLimiter(WithClock(clock.Now))
	l := Limit{Name: "evict", Window: time.Second, Max: 1}
	const n = 20000
	for i := 0; i < n; i++ {
		allow(t, lim, l, "old"+strconv.Itoa(i))
	}
	require.Equal(t, n, lim.Len())

	// Once the old keys' admissions have left the window, new traffic evicts
	// them as it goes: the map holds the live keys plus bounded slack.
	clock.Advance(11 * time.Second)
	for i := 0; i < n; i++ {
		allow(t, lim, l, "new"+strconv.Itoa(i))
	}
	require.LessOrEqual(t, lim.Len(), n+memShards*memMinSweep)

	// Keys still inside their window are never evicted: evicting one would
	// forget admissions and let extra calls through.
	for i := 0; i < n; i += 97 {
		require.False(t, allow(t, lim, l, "new"+strconv.Itoa(i)).Allowed)
	}
}

func TestMemoryGrowthStaysBounded(t *testing.T) {
	// A stream of distinct keys, each used once per window, keeps only about
	// a window's worth of keys alive.
	clock := newFakeClock()
	lim := NewMemoryLimiter(WithClock(clock.Now))
	l := Limit{Name: "stream", Window: 100 * time.Millisecond, Max: 1}
	peak := 0
	for i := 0; i < 200000; i++ {
		allow(t, lim, l, strconv.Itoa(i))
		clock.Advance(100 * time.Microsecond) // 1,000 keys per window
		if i%1000 == 0 {
			peak = max(peak, lim.Len())
		}
	}
	t.Logf("peak keys held: %d (1,000 live per window)", peak)
	require.Less(t, peak, 20000)
}
