package redislimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type flightKey struct{}

// A flight is the round trip's context: the values of the call that
// started it, none of its cancellation, done once every caller left.
func TestFlightContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), flightKey{}, "trace"))
	f := newFlight(parent, 2, connectBound{})
	f.start()
	cancel()
	require.Equal(t, "trace", f.Value(flightKey{}))
	require.NoError(t, f.Err(), "the caller's cancellation is not the round trip's")
	_, ok := f.Deadline()
	require.False(t, ok, "no connect bound, no deadline")
	done := f.Done()
	f.leave()
	select {
	case <-done:
		t.Fatal("done while a caller waits")
	default:
	}
	f.leave()
	<-done
	require.ErrorIs(t, f.Err(), context.Canceled)
	// A derived context follows it, as go-redis's dialer's would.
	child, stop := context.WithTimeout(f, time.Hour)
	defer stop()
	<-child.Done()
	require.ErrorIs(t, child.Err(), context.Canceled)
	f.landed()
}

// The connect bound is the flight's deadline, and ends it when it passes.
func TestFlightConnectBound(t *testing.T) {
	by := mono() + int64(time.Millisecond)
	f := newFlight(context.Background(), 1, connectBound{by: by, least: time.Millisecond})
	f.start()
	dl, ok := f.Deadline()
	require.True(t, ok)
	require.False(t, dl.Before(timeOf(by)))
	<-f.Done()
	require.True(t, errors.Is(f.Err(), context.DeadlineExceeded))
	f.leave()
	require.ErrorIs(t, f.Err(), context.DeadlineExceeded, "the first end stays")
	f.landed()
}
