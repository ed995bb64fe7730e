package ratelimitgrpc

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// RetryDelay returns how long the server asked the client to wait before
// it retries the call that failed with err: the retry_delay of the first
// google.rpc.RetryInfo detail of err's gRPC status, which Status and the
// server interceptors attach to every denial. It reports false when err
// is nil, is not a gRPC status error (errors wrapping one count), or
// carries no RetryInfo with a valid, non-negative delay.
//
// A client that waits the delay before retrying is admitted unless others
// took the room first; retrying sooner is denied again. Retry interceptors
// that ignore RetryInfo, such as go-grpc-middleware's, retry
// RESOURCE_EXHAUSTED on their own schedule; check RetryDelay first:
//
//	resp, err := client.SendCode(ctx, req)
//	if d, ok := ratelimitgrpc.RetryDelay(err); ok {
//		select {
//		case <-time.After(d):
//			resp, err = client.SendCode(ctx, req)
//		case <-ctx.Done():
//		}
//	}
func RetryDelay(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	for _, d := range st.Details() {
		ri, ok := d.(*errdetails.RetryInfo)
		if !ok {
			continue
		}
		if err := ri.GetRetryDelay().CheckValid(); err != nil {
			return 0, false
		}
		if delay := ri.GetRetryDelay().AsDuration(); delay >= 0 {
			return delay, true
		}
		return 0, false
	}
	return 0, false
}
