package redislimit

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// TestFallbackFloodStaysWithinMemory floods a Limiter with New's defaults
// with 1.2 million distinct keys while its real Redis is down: the FailLocal
// fallback decides them all, and must neither grow the heap past its
// memory budget (an attacker's random addresses would otherwise grow the
// process until the kernel kills it) nor let go of a key at its limit that
// keeps being used meanwhile. The flood comes from two goroutines, to take
// both cores of a small machine.
func TestFallbackFloodStaysWithinMemory(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithInstances(1))
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Hour, Max: 3}
	ctx := context.Background()
	srv.Stop(t)

	const victim = "victim@example.com"
	for i := range l.Max {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: victim})
		require.NoError(t, err)
		require.True(t, ds.Allowed, "call %d", i+1)
		require.Equal(t, runtime.SourceFallback, ds.Source, "Redis is down: the fallback decides")
	}
	before := int64(heapInUse())
	const keys, workers = 1_200_000, 2
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < keys; i += workers {
				if i/workers%1000 == 0 {
					// The deny cache may answer too; either way, denied.
					d, err := lim.Allow(ctx, l, victim)
					if err != nil || d.Allowed {
						t.Error(fmt.Errorf("call %d: the key at its limit was admitted (%+v, %v)", i, d, err))
						return
					}
				}
				if _, err := lim.Allow(ctx, l, "u"+strconv.Itoa(i)+"@flood.example.com"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	after := int64(heapInUse())
	t.Logf("heap: +%.1f MiB after %d distinct keys decided by the fallback", float64(after-before)/(1<<20), keys)
	require.LessOrEqual(t, after-before, int64(100<<20), "the fallback grew the heap past its budget")
	goruntime.KeepAlive(lim)
}

// memoryFullObserver remembers whether an event's Err was memlimit.ErrFull,
// and every error message it saw.
type memoryFullObserver struct {
	mu   sync.Mutex
	full int
	msgs []string
}

func (o *memoryFullObserver) Observe(_ context.Context, ev runtime.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if errors.Is(ev.Err, memlimit.ErrFull) {
		o.full++
	}
	if ev.Err != nil {
		o.msgs = append(o.msgs, ev.Err.Error())
	}
}

// TestFallbackReportsMemoryFull: when the fallback makes room by forgetting
// keys that still count, observers of an Operate limiter are told, beside
// Redis's own error, and never the key.
func TestFallbackReportsMemoryFull(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFallback(memlimit.New(memlimit.WithMaxMemory(64<<10))), WithInstances(1))
	obs := &memoryFullObserver{}
	op := runtime.Operate(lim, runtime.WithObserver(obs))
	l := runtime.Limit{Name: "fallback.full", Window: time.Hour, Max: 3}
	srv.Stop(t)
	ctx := context.Background()
	for i := range 20_000 {
		ds, err := op.Decide(ctx, runtime.Request{Limit: l, Key: "k" + strconv.Itoa(i) + "@example.com"})
		require.NoError(t, err)
		require.Equal(t, runtime.SourceFallback, ds.Source)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.NotZero(t, obs.full, "20,000 keys in 64 KiB: the fallback must have forgotten keys that counted, and said so")
	for _, m := range obs.msgs {
		require.NotContains(t, m, "@example.com", "an error must not carry a key")
	}
}
