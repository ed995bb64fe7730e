package redislimit

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestHotKeyWithDefaultsStaysExact hammers one key from 4 limiters (one
// client each) with 16 goroutines apiece, all with the defaults: the deny
// cache on, FailLocal, a 500ms timeout. Once the key is full, the deny
// cache answers most calls in process without ever blocking, so the
// goroutines that read Redis's replies wait for the CPU behind goroutines
// that never block, past the timeout at times. A reply read late is still Redis's answer: if
// the limiter took it for an outage, each limiter's fallback would admit
// Max on its own.
//
// The audit needs no durations. Each admission is bracketed by the app's
// clock read before Decide and after it; Redis stamped it in between. An
// exact limiter therefore cannot admit more than Max calls that were all
// sent and answered within one window of the app's clock, whatever the
// latencies.
func TestHotKeyWithDefaultsStaysExact(t *testing.T) {
	const (
		limiters   = 4
		goroutines = 16
		limitMax   = 20
		window     = 500 * time.Millisecond
		duration   = 2 * time.Second
		// The server stamps admissions with its TIME (the wall clock, in
		// µs) and the audit reads the app's monotonic clock: they may
		// drift apart by NTP's slewing (at most 500ppm, 0.25ms a window)
		// and a µs of truncation. Windows are audited this much shorter.
		clockSlack = time.Millisecond
	)
	srv := redistest.StartServer(t)
	l := runtime.Limit{Name: "Hot.Defaults", Window: window, Max: limitMax}
	const key = "hot@example.com"

	var (
		degraded atomic.Int64
		causesMu sync.Mutex
		causes   []string
	)
	onDegraded := func(ev DegradedEvent) {
		if degraded.Add(1) <= 3 {
			causesMu.Lock()
			causes = append(causes, fmt.Sprint(ev.Err))
			causesMu.Unlock()
		}
	}
	var lims []*Limiter
	for range limiters {
		lims = append(lims, New(srv.Client(t), WithOnDegraded(onDegraded)))
	}

	// span is one admission on the app's clock, in ns since base.
	type span struct{ sent, answered int64 }
	var (
		mu      sync.Mutex
		spans   []span
		sources [runtime.SourceFailOpen + 1]atomic.Int64
		errs    = make(chan error, limiters*goroutines)
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	base := time.Now()
	for _, lim := range lims {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []span
				defer func() {
					mu.Lock()
					spans = append(spans, mine...)
					mu.Unlock()
				}()
				for {
					select {
					case <-stop:
						return
					default:
					}
					sent := time.Since(base)
					ds, err := lim.Decide(context.Background(), runtime.Request{Limit: l, Key: key})
					answered := time.Since(base)
					if err != nil {
						errs <- err
						return
					}
					sources[ds.Source].Add(1)
					if ds.Allowed {
						mine = append(mine, span{int64(sent), int64(answered)})
					}
				}
			}()
		}
	}
	time.Sleep(duration)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "FailLocal never returns an error")
	}

	// worst is the most admissions sent at or after one admission was sent
	// and answered before a window (less the slack) had passed since.
	sort.Slice(spans, func(i, j int) bool { return spans[i].sent < spans[j].sent })
	w := int64(window - clockSlack)
	worst := 0
	for i := range spans {
		n := 0
		for j := i; j < len(spans) && spans[j].sent < spans[i].sent+w; j++ {
			if spans[j].answered < spans[i].sent+w {
				n++
			}
		}
		worst = max(worst, n)
	}
	bySource := map[string]int64{}
	for s := range sources {
		bySource[runtime.Source(s).String()] = sources[s].Load()
	}
	t.Logf("%d limiters x %d goroutines on one key, Max %d per %v, for %v: %d admitted; worst window held %d; sources %v; %d degraded events %q",
		limiters, goroutines, limitMax, window, duration, len(spans), worst, bySource, degraded.Load(), causes)

	require.GreaterOrEqual(t, len(spans), limitMax, "the first Max calls on a fresh key are admitted")
	require.LessOrEqual(t, worst, limitMax, "more than Max admissions sent and answered within one window")
	require.Zero(t, bySource[runtime.SourceFallback.String()]+bySource[runtime.SourceFailOpen.String()],
		"decisions taken from Redis although it was healthy all along")
	require.Zero(t, degraded.Load(), "degraded events although Redis was healthy all along")
}
