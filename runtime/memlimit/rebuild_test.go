package memlimit

import (
	"math"
	"strconv"
	"testing"
)

// TestShardRebuildKeepsKeysInSteadyUse drives one memory shard directly: a
// budget of a few dozen keys, a flood of one-time keys that keeps the
// eviction hand moving and the table being rebuilt, and hot keys each used
// once every few flood keys, more often than once per round of the hand.
// No hot key may be evicted. The hashes are fixed, so each case runs the
// same every time; without a rebuild's new marks (entryWord.revisit), a
// rebuild can put a key that the hand has just passed right ahead of it,
// and each of these cases loses one.
func TestShardRebuildKeepsKeysInSteadyUse(t *testing.T) {
	for _, c := range []struct{ hot, capacity int }{{10, 24}, {20, 96}, {30, 96}} {
		t.Run(strconv.Itoa(c.hot)+"of"+strconv.Itoa(c.capacity), func(t *testing.T) {
			var s shard
			s.tab.Store(newTable(minSlots))
			s.bytes = slotBytes * minSlots
			s.budget = int64(c.capacity)*entryBytes(algoFixedWindow, false, len("flood-0000000")) + 128*slotBytes
			add := func(i int, key string) *entry {
				k := storeKey{algo: algoFixedWindow, name: "n", key: key}
				e, _ := s.add(uint64(i+1)*0x9e3779b97f4a7c15, &k, "n", false, 1, nil)
				// Every key counts an admission for ever: only the hand's
				// marks decide which goes.
				e.expireAt = math.MaxInt64
				return e
			}
			// use is a call on e, which marks it as it unlocks.
			use := func(e *entry, call int) {
				if !e.w.lock() {
					t.Fatalf("call %d: a hot key was evicted", call)
				}
				e.w.unlock()
			}
			hot := make([]*entry, c.hot)
			for i := range hot {
				hot[i] = add(i, "hot-"+strconv.Itoa(i))
				use(hot[i], 0)
			}
			rebuilds, tab := 0, s.tab.Load()
			for i := range 50_000 {
				add(len(hot)+i, "flood-"+strconv.Itoa(1_000_000+i))
				use(hot[i%len(hot)], i)
				if s.tab.Load() != tab {
					rebuilds, tab = rebuilds+1, s.tab.Load()
				}
			}
			t.Logf("%d keys held in %d slots; %d rebuilds", s.n, len(tab.slots), rebuilds)
			if rebuilds < 50 {
				t.Fatalf("only %d rebuilds: the flood should rebuild the table many times", rebuilds)
			}
		})
	}
}
