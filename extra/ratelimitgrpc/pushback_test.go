package ratelimitgrpc

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestPushbackMillis: whole milliseconds, rounded up, at least 1.
func TestPushbackMillis(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		-time.Second:               0 + 1,
		0:                          1,
		time.Nanosecond:            1,
		999 * time.Microsecond:     1,
		time.Millisecond:           1,
		1200 * time.Microsecond:    2,
		41200 * time.Millisecond:   41200,
		41200*time.Millisecond + 1: 41201,
		time.Duration(1<<63 - 1):   9223372036855,
	} {
		if got := pushbackMillis(d); got != want {
			t.Errorf("pushbackMillis(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestPushbackOnlyForLimitErrors: a trailer needs the wait of a
// *runtime.LimitError; other outcomes get none.
func TestPushbackOnlyForLimitErrors(t *testing.T) {
	le := &runtime.LimitError{Limit: runtime.Limit{Name: "n", Window: time.Second, Max: 1}, Decision: runtime.Decision{RetryAfter: 1500 * time.Microsecond}}
	md, ok := pushback(fmt.Errorf("wrapped: %w", le))
	if !ok || len(md.Get(PushbackTrailer)) != 1 || md.Get(PushbackTrailer)[0] != "2" {
		t.Errorf("pushback(LimitError of 1.5ms) = %v, %v; want %s: 2", md, ok, PushbackTrailer)
	}
	for _, err := range []error{runtime.ErrLimited, runtime.ErrUnavailable, errors.New("other")} {
		if md, ok := pushback(err); ok {
			t.Errorf("pushback(%v) = %v, want none", err, md)
		}
	}
}
