package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// bindingRunEnv makes this test binary one instance of
// BenchmarkHotKeyBinding: "addr,algorithm,lease period,start µs,seconds,
// goroutines,pause", each goroutine pausing that long between its calls.
const bindingRunEnv = "RATELIMITGEN_BENCH_BINDING_RUN"

// The binding hot key: Max 200,000 per second, above what one Redis node
// decides per call on this machine, with a burst of a tenth of a second.
const (
	bindingMax   = 200_000
	bindingBurst = 20_000
	bindingSlot  = 100 * time.Millisecond
)

// bindingReport is what one instance admitted, per bindingSlot of the wall
// clock from the run's start (by the time each call returned).
type bindingReport struct {
	Slots []int64
}

// runBinding is one instance: a limiter with its own client and its
// goroutines on the hot key from the given start for the given seconds.
func runBinding(spec string) error {
	f := strings.Split(spec, ",")
	if len(f) != 7 {
		return fmt.Errorf("want 7 fields, got %d", len(f))
	}
	period, err := time.ParseDuration(f[2])
	if err != nil {
		return err
	}
	startUs, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return err
	}
	secs, err := strconv.Atoi(f[4])
	if err != nil {
		return err
	}
	goroutines, err := strconv.Atoi(f[5])
	if err != nil {
		return err
	}
	pause, err := time.ParseDuration(f[6])
	if err != nil {
		return err
	}
	client := newClient(f[0])
	defer client.Close()
	lim := redislimit.New(client, redislimit.WithInstances(4), redislimit.WithLeases(period))
	l := runtime.Limit{Name: "binding", Window: time.Second, Max: bindingMax, Burst: bindingBurst, Algorithm: runtime.Algorithm(f[1])}
	start := time.UnixMicro(startUs)
	end := start.Add(time.Duration(secs) * time.Second)
	slots := make([]atomic.Int64, int(time.Duration(secs)*time.Second/bindingSlot)+1)
	time.Sleep(time.Until(start))
	var wg sync.WaitGroup
	var failed atomic.Value
	for range goroutines {
		wg.Go(func() {
			for {
				if pause > 0 {
					time.Sleep(pause)
				}
				d, err := lim.Allow(context.Background(), l, "hot")
				now := time.Now()
				if err != nil {
					failed.Store(err.Error())
					return
				}
				if !now.Before(end) {
					return
				}
				if d.Allowed {
					slots[now.Sub(start)/bindingSlot].Add(1)
				}
			}
		})
	}
	wg.Wait()
	if e, ok := failed.Load().(string); ok {
		return fmt.Errorf("a decision failed: %s", e)
	}
	var rep bindingReport
	for i := range slots {
		rep.Slots = append(rep.Slots, slots[i].Load())
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// BenchmarkHotKeyBinding runs four instances, each a process of its own
// (this binary again) with its own client and 16 goroutines, on one key of
// a binding limit of 200,000 per second (Burst 20,000), for 10 seconds,
// leases off and on. of-limit is what they admitted per second over the
// limit; worst-1s is the most admitted in any second (10 slots of 100ms)
// over what the algorithm allows in a second, Burst + Max. The skew row
// has one instance hot and three nearly idle (one goroutine each, 10ms
// between calls): hot-of-limit is what the hot one admitted per second
// over the limit. One run is enough:
//
//	go test -run '^$' -bench HotKeyBinding -benchtime 1x
func BenchmarkHotKeyBinding(b *testing.B) {
	c := startRedis(b)
	addr := c.Options().Addr
	const secs = 10
	for _, algo := range []runtime.Algorithm{runtime.GCRA} {
		for _, row := range []struct {
			name   string
			period time.Duration
			skew   bool
		}{{"off", 0, false}, {"on", 10 * time.Millisecond, false}, {"on-skew", 10 * time.Millisecond, true}} {
			period := row.period
			b.Run(fmt.Sprintf("algo=%s/leases=%s", algo, row.name), func(b *testing.B) {
				for range b.N {
					flush(b, c)
					resetServerStats(b, c)
					start := time.Now().Add(time.Second)
					var reps []bindingReport
					var cmds []*exec.Cmd
					var outs []*strings.Builder
					for i := range 4 {
						goroutines, pause := 16, time.Duration(0)
						if row.skew && i > 0 {
							goroutines, pause = 1, 10*time.Millisecond
						}
						cmd := exec.Command(os.Args[0], "-test.run=^$")
						cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%s,%d,%d,%d,%s", bindingRunEnv, addr, algo, period, start.UnixMicro(), secs, goroutines, pause))
						out := &strings.Builder{}
						cmd.Stdout, cmd.Stderr = out, os.Stderr
						if err := cmd.Start(); err != nil {
							b.Fatal(err)
						}
						cmds, outs = append(cmds, cmd), append(outs, out)
					}
					for i, cmd := range cmds {
						if err := cmd.Wait(); err != nil {
							b.Fatalf("instance: %v", err)
						}
						var rep bindingReport
						if err := json.Unmarshal([]byte(outs[i].String()), &rep); err != nil {
							b.Fatalf("instance's report %q: %v", outs[i].String(), err)
						}
						reps = append(reps, rep)
					}
					slots := make([]int64, len(reps[0].Slots))
					total := int64(0)
					for _, rep := range reps {
						for i, n := range rep.Slots {
							slots[i] += n
							total += n
						}
					}
					worst := int64(0)
					for i := 0; i+10 <= len(slots); i++ {
						n := int64(0)
						for _, s := range slots[i : i+10] {
							n += s
						}
						worst = max(worst, n)
					}
					if row.skew {
						hot := int64(0)
						for _, n := range reps[0].Slots {
							hot += n
						}
						b.ReportMetric(float64(hot)/secs/bindingMax, "hot-of-limit")
					}
					_, calls := scriptStats(b, c)
					b.ReportMetric(float64(total)/secs/bindingMax, "of-limit")
					b.ReportMetric(float64(worst)/(bindingMax+bindingBurst), "worst-1s")
					b.ReportMetric(calls*1000/float64(max(total, 1)), "scripts/1k-admitted")
				}
			})
		}
	}
}
