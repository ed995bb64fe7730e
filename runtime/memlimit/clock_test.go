package memlimit

import "github.com/ratelimitgen/ratelimitgen/internal/testclock"

type fakeClock = testclock.Clock

var newFakeClock = testclock.New
