package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type outboundCalls struct{ call, short, long, multi int }

func (o *outboundCalls) Call(context.Context) error          { o.call++; return nil }
func (o *outboundCalls) Short(context.Context) error         { o.short++; return nil }
func (o *outboundCalls) Long(context.Context) error          { o.long++; return nil }
func (o *outboundCalls) Multi(context.Context, string) error { o.multi++; return nil }

// With wait=, a denied call waits for the room the limiter names and then
// goes through; it is denied at once when that room comes later than its
// wait or its context's deadline allows. Only outcomes are checked, never
// how long anything took.
func exerciseWait(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	next := &outboundCalls{}
	o := NewRateLimitedOutbound(next, lim)
	for n := range 3 {
		if err := o.Call(ctx); err != nil {
			t.Fatalf("Call %d, which waits for the 50ms window: %v", n+1, err)
		}
		if err := o.Multi(ctx, "k"); err != nil {
			t.Fatalf("Multi %d, which waits for the 50ms window: %v", n+1, err)
		}
	}

	if err := o.Short(ctx); err != nil {
		t.Fatal(err)
	}
	// The room comes in an hour; the wait is 10ms.
	if err := o.Short(ctx); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("Short with the window full: got %v, want a denial", err)
	}

	if err := o.Long(ctx); err != nil {
		t.Fatal(err)
	}
	// The wait (2h) would cover the hour, the context's deadline does
	// not: denied at once rather than failed at the deadline.
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := o.Long(dctx); !errors.Is(err, runtime.ErrLimited) {
		t.Fatalf("Long with a deadline before the room: got %v, want a denial", err)
	}
	if next.call != 3 || next.multi != 3 || next.short != 1 || next.long != 1 {
		t.Fatalf("the wrapped methods ran %+v; want 3 Call, 3 Multi, 1 Short, 1 Long", *next)
	}
}

func TestWaitMemory(t *testing.T) {
	exerciseWait(t, memlimit.New())
}

func TestWaitRedis(t *testing.T) {
	exerciseWait(t, newRedisLimiter(t))
}
