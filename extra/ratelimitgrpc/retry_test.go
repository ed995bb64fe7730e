package ratelimitgrpc_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitgrpc"
)

func TestRetryDelay(t *testing.T) {
	withRetry := func(d *durationpb.Duration) error {
		st, err := status.New(codes.ResourceExhausted, "slow down").WithDetails(
			&errdetails.QuotaFailure{}, &errdetails.RetryInfo{RetryDelay: d})
		require.NoError(t, err)
		return st.Err()
	}
	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"nil", nil, 0, false},
		{"not a status", errors.New("EOF"), 0, false},
		{"a status without details", status.Error(codes.ResourceExhausted, "slow down"), 0, false},
		{"RetryInfo after another detail", withRetry(durationpb.New(1500 * time.Millisecond)), 1500 * time.Millisecond, true},
		{"a wrapped status error", fmt.Errorf("calling: %w", withRetry(durationpb.New(time.Second))), time.Second, true},
		{"zero", withRetry(durationpb.New(0)), 0, true},
		{"no delay", withRetry(nil), 0, false},
		{"a negative delay", withRetry(durationpb.New(-time.Second)), 0, false},
		{"an invalid delay", withRetry(&durationpb.Duration{Seconds: 1, Nanos: -1}), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ratelimitgrpc.RetryDelay(tc.err)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRetryDelayRoundTrip: what Status writes, RetryDelay reads back
// exactly, through the wire format of a status.
func TestRetryDelayRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 41200 * time.Millisecond, 24 * time.Hour} {
		st, ok := ratelimitgrpc.Status(denial(sendCode, d))
		require.True(t, ok)
		wire := status.FromProto(st.Proto())
		got, ok := ratelimitgrpc.RetryDelay(wire.Err())
		require.True(t, ok)
		assert.Equal(t, d, got)
	}
}
