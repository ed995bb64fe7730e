package redislimit

import (
	"context"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/testclock"
)

type fakeClock = testclock.Clock

var newFakeClock = testclock.New

var ctx = context.Background()

func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
