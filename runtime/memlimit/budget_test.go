package memlimit

import (
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// floodKey returns the i-th key of a flood, shaped like an e-mail address.
func floodKey(i int) string {
	return "u" + strconv.Itoa(i) + "@flood.example.com"
}

// flood decides keys distinct keys once each under l through allow, from
// two goroutines (so that the flood takes both cores of a small machine),
// and calls check between them, every 1,000th call of each goroutine.
func flood(t *testing.T, keys int, allow func(key string) error, check func(call int) error) {
	t.Helper()
	const workers = 2
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < keys; i += workers {
				if i/workers%1000 == 0 {
					if err := check(i); err != nil {
						t.Error(err)
						return
					}
				}
				if err := allow(floodKey(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// memoryCharged returns what lim's shards charge against its budget.
func memoryCharged(lim *Limiter) int64 {
	var n int64
	for i := range lim.shards {
		s := &lim.shards[i]
		s.mu.Lock()
		n += s.bytes + s.grown.Load()
		s.mu.Unlock()
	}
	return n
}

func TestMemoryFloodStaysWithinDefaultBudget(t *testing.T) {
	// An attacker's flood of 1.2 million one-time keys (which hold 190 MiB
	// when every key stays until its window ends, and almost four times
	// what the default budget holds) must neither grow the heap past the
	// default budget nor reset a key that is at its limit and keeps being
	// used meanwhile.
	lim := New()
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Hour, Max: 3}
	const victim = "victim@example.com"
	for range l.Max {
		require.True(t, allow(t, lim, l, victim).Allowed)
	}
	before := heapInUse()
	var mu sync.Mutex
	denied := 0
	flood(t, 1_200_000, func(key string) error {
		_, err := lim.Allow(ctx, l, key)
		return err
	}, func(call int) error {
		d, err := lim.Allow(ctx, l, victim)
		if err != nil || d.Allowed {
			return fmt.Errorf("call %d: the key at its limit was admitted (%+v, %v)", call, d, err)
		}
		mu.Lock()
		denied++
		mu.Unlock()
		return nil
	})
	after := heapInUse()
	t.Logf("heap: +%.1f MiB after 1,200,000 distinct keys (%.1f MiB charged), %d keys held; the key at its limit was denied all %d times",
		float64(after-before)/mib, float64(memoryCharged(lim))/mib, lim.Len(), denied)
	require.LessOrEqual(t, after-before, int64(100*mib), "the flood grew the heap past the budget")
	require.LessOrEqual(t, memoryCharged(lim), int64(defaultMaxMemory))
	goruntime.KeepAlive(lim)
}

func TestMemoryFloodKeepsKeysInUse(t *testing.T) {
	// Whatever the algorithm, keys in use, even denied every time, outlast
	// a flood of one-time keys many times the budget; the flood's own keys
	// are forgotten, and the calls that forgot them say so.
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			lim := New(WithClock(newFakeClock().Now), WithMaxMemory(mib))
			l := runtime.Limit{Name: "keep", Window: time.Hour, Max: 1, Algorithm: algo}
			hot := make([]string, 20)
			for i := range hot {
				hot[i] = "hot" + strconv.Itoa(i)
				require.True(t, allow(t, lim, l, hot[i]).Allowed)
			}
			full := 0
			for i := range 100_000 {
				ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: floodKey(i)})
				require.NoError(t, err)
				require.True(t, ds.Allowed, "a new key is decided as usual, full or not")
				if ds.Cause != nil {
					require.ErrorIs(t, ds.Cause, ErrFull)
					full++
				}
				if i%25 == 0 {
					key := hot[i/25%len(hot)]
					require.False(t, allow(t, lim, l, key).Allowed, "call %d: %s was forgotten", i, key)
				}
			}
			t.Logf("%d keys held, %d KiB charged; %d calls forgot a key", lim.Len(), memoryCharged(lim)>>10, full)
			require.Greater(t, full, 50_000, "the flood should have filled the limiter many times over")
			require.LessOrEqual(t, memoryCharged(lim), int64(mib))
			require.Less(t, lim.Len(), 100_000)
		})
	}
}

func TestMemoryEvictsExpiredKeysFirst(t *testing.T) {
	// Keys whose admissions have all expired make room before any key
	// that still counts: refilling a full limiter with as many new keys as
	// it held expired ones forgets nothing that counts.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now), WithMaxMemory(256<<10))
	short := runtime.Limit{Name: "short", Window: time.Second, Max: 1}
	long := runtime.Limit{Name: "long", Window: time.Hour, Max: 1}
	i := 0
	for ; ; i++ {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: short, Key: floodKey(i)})
		require.NoError(t, err)
		if ds.Cause != nil {
			break
		}
	}
	held := lim.Len()
	require.Greater(t, held, 500)
	clock.Advance(2 * time.Second)
	// Half as many, so that no shard gets more new keys than it held old
	// ones, whatever the hashes.
	for j := range held / 2 {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: long, Key: floodKey(j)})
		require.NoError(t, err)
		require.True(t, ds.Allowed)
		require.NoError(t, ds.Cause, "key %d of %d: a key that counted went while expired ones were held", j, held/2)
	}
	for j := range held / 2 {
		require.False(t, allow(t, lim, long, floodKey(j)).Allowed, "key %d was forgotten", j)
	}
}

func TestMemoryDecideKeepsItsOwnKeys(t *testing.T) {
	// However small the budget, making room for one of a call's keys never
	// evicts another key of the same call: the call records in all of them.
	lim := New(WithClock(newFakeClock().Now), WithMaxMemory(1))
	var reqs []runtime.Request
	s := -1
	for i := 0; len(reqs) < 2*len(runtime.Algorithms()); i++ {
		l := runtime.Limit{Name: "own", Window: time.Hour, Max: 1, Algorithm: runtime.Algorithms()[len(reqs)%len(runtime.Algorithms())]}
		key := floodKey(i)
		if s < 0 {
			s = int(shardIndex(lim, l, key))
		}
		if int(shardIndex(lim, l, key)) == s {
			reqs = append(reqs, runtime.Request{Limit: l, Key: key})
		}
	}
	ds, err := lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.Equal(t, len(reqs), lim.Len())
	ds, err = lim.Decide(ctx, reqs...)
	require.NoError(t, err)
	require.False(t, ds.Allowed)
	for i, d := range ds.Each {
		require.False(t, d.Allowed, "%s: the call's admission was lost", reqs[i].Limit.Algorithm)
	}
}

func TestMemoryChargesWhatItHolds(t *testing.T) {
	// Sliding logs grow 8 bytes per admission: they are charged as they
	// grow, so that the heap the limiter holds stays within its budget
	// however many admissions its keys hold.
	const budget = 4 * mib
	clock := newFakeClock()
	lim := New(WithClock(clock.Now), WithMaxMemory(budget))
	before := heapInUse()
	for _, algo := range runtime.Algorithms() {
		l := runtime.Limit{Name: "charge", Window: time.Hour, Max: 100, Algorithm: algo}
		for i := range 5_000 {
			key := floodKey(i)
			for range 40 {
				_, err := lim.Allow(ctx, l, key)
				require.NoError(t, err)
			}
		}
	}
	after := heapInUse()
	t.Logf("heap: +%.2f MiB for a budget of %d MiB, %.2f MiB charged, %d keys held",
		float64(after-before)/mib, budget/mib, float64(memoryCharged(lim))/mib, lim.Len())
	require.LessOrEqual(t, memoryCharged(lim), int64(budget))
	require.LessOrEqual(t, after-before, int64(budget+mib/2), "the limiter holds more than it charges")

	// Once everything has expired, a sweep gives back every charge but
	// the tables'.
	clock.Advance(2 * time.Hour)
	require.Zero(t, lim.sweep())
	for i := range lim.shards {
		s := &lim.shards[i]
		require.Zero(t, s.grown.Load())
		require.Equal(t, slotBytes*int64(len(s.tab.Load().slots)), s.bytes)
	}
	goruntime.KeepAlive(lim)
}

func TestMemoryEvictionConcurrent(t *testing.T) {
	// Evictions run under a shard's lock while calls on held keys decide
	// without it, Decide holds several keys, and sweeps run; run with
	// -race. Every key is then either held and counted or gone: once all
	// have expired, nothing stays charged.
	clock := newFakeClock()
	lim := New(WithClock(clock.Now), WithMaxMemory(64<<10))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := runtime.Limit{Name: "conc", Window: time.Minute, Max: 2, Algorithm: runtime.Algorithms()[g%len(runtime.Algorithms())]}
			l2 := runtime.Limit{Name: "conc2", Window: time.Minute, Max: 3, Algorithm: runtime.Algorithms()[(g+1)%len(runtime.Algorithms())]}
			for i := range 3000 {
				var err error
				switch i % 3 {
				case 0:
					_, err = lim.Allow(ctx, l, floodKey(g*1_000_000+i))
				case 1:
					_, err = lim.Allow(ctx, l, "hot"+strconv.Itoa(i%7))
				default:
					_, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: floodKey(g*1_000_000 + i)},
						runtime.Request{Limit: l2, Key: "hot" + strconv.Itoa(i%5)}, runtime.Request{Limit: l2, Key: floodKey(i)})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			lim.sweep()
		}
	}()
	wg.Wait()
	require.LessOrEqual(t, memoryCharged(lim), int64(64<<10+shardCount*1024))
	clock.Advance(time.Hour)
	require.Zero(t, lim.sweep())
	for i := range lim.shards {
		s := &lim.shards[i]
		require.Zero(t, s.grown.Load())
		require.Equal(t, slotBytes*int64(len(s.tab.Load().slots)), s.bytes)
	}
}
