package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCeilingExact checks that the ceiling keeps the promise of the
// limiters it is compared with: from 64 goroutines whose calls share
// batches, one key gets exactly Max admissions in a window (never more,
// and none lost), for both scripts. Other keys in the same batches must
// not disturb it.
func TestCeilingExact(t *testing.T) {
	c := startRedis(t)
	ctx := context.Background()
	const max, goroutines, calls = 50, 64, 20
	for _, ct := range ceilingContenders {
		flush(t, c)
		decide, err := ct.build(c, spec{window: time.Hour, max: max}, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		var admitted, others atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for i := range calls {
					key := "one@example.com"
					if (g+i)%2 == 1 {
						key = "other" + string(rune('a'+g%26)) + "@example.com"
					}
					ok, err := decide(ctx, key)
					if err != nil {
						errs <- err
						return
					}
					if ok && key == "one@example.com" {
						admitted.Add(1)
					} else if ok {
						others.Add(1)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%s: %v", ct.name, err)
		}
		if n := admitted.Load(); n != max {
			t.Errorf("%s admitted %d calls on one key in one window, want exactly Max %d", ct.name, n, max)
		}
		// 26 other keys share the other 640 calls, fewer than Max each:
		// all of them are admitted.
		if n := others.Load(); n != goroutines*calls/2 {
			t.Errorf("%s admitted %d calls on the other keys, want all %d", ct.name, n, goroutines*calls/2)
		}
	}
}

// TestCeilingWindowPasses checks that admissions come back as the window
// slides: Max again after a whole window, for both scripts.
func TestCeilingWindowPasses(t *testing.T) {
	c := startRedis(t)
	ctx := context.Background()
	const max, window = 5, 200 * time.Millisecond
	for _, ct := range ceilingContenders {
		flush(t, c)
		decide, err := ct.build(c, spec{window: window, max: max}, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			admitted := 0
			for range 2 * max {
				ok, err := decide(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					admitted++
				}
			}
			if admitted != max {
				t.Errorf("%s, window %d: admitted %d of %d calls, want Max %d", ct.name, round+1, admitted, 2*max, max)
			}
			time.Sleep(window + 20*time.Millisecond)
		}
	}
}
