package bench

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestFallbackIsAnError checks what keeps ratelimitgen's rows honest on its
// defaults: a decision made by the in-memory fallback (here, because Redis
// refuses connections) is an error, not an admission the benchmark would
// count as Redis's.
func TestFallbackIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newClient(addr)
	t.Cleanup(func() { _ = c.Close() })
	for _, algo := range []runtime.Algorithm{runtime.SlidingLog, runtime.GCRA} {
		decide, err := ratelimitgen(algo, false)(c, spec{window: time.Second, max: 10}, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			ok, err := decide(context.Background(), "k")
			if err == nil {
				t.Fatalf("%v: Redis is down, yet the decision (admitted %v) came without an error", algo, ok)
			}
			t.Logf("%v: %v", algo, err)
		}
	}
}
