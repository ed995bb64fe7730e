package ratelimitgrpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// PushbackTrailer is the trailer through which a server tells a gRPC
// client how long to wait before it retries, in whole milliseconds (gRFC
// A6, client retries). grpc-go honours it when the method's retry policy
// lists the status code among its retryableStatusCodes: it then waits
// exactly that long instead of its own backoff. A negative or unparseable
// value, or more than one value, tells it not to retry at all.
const PushbackTrailer = "grpc-retry-pushback-ms"

// UnaryServerInterceptor returns an interceptor that answers the rate-limit
// errors of unary handlers with gRPC statuses:
//
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(ratelimitgrpc.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(ratelimitgrpc.StreamServerInterceptor()),
//	)
//	verifypb.RegisterVerifierServer(srv, verifypb.NewRateLimitedVerifierServer(impl, limiter))
//
// An error the handler returns is replaced by its Status when it has one
// (a denial or a limiter failure); a denial by a *runtime.LimitError also
// sets the PushbackTrailer trailer to its RetryAfter in milliseconds,
// rounded up and at least 1. Every other error, and every response, is
// returned unchanged. Place it after interceptors that log or count
// errors by type if they should see the *runtime.LimitError, before them
// if they should see the status.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err == nil {
			return resp, nil
		}
		st, ok := Status(err)
		if !ok {
			return resp, err
		}
		if md, ok := pushback(err); ok {
			// SetTrailer fails only outside a server call, and the status
			// answers the call without it.
			_ = grpc.SetTrailer(ctx, md)
		}
		return nil, st.Err()
	}
}

// StreamServerInterceptor returns the interceptor that does for streaming
// handlers what UnaryServerInterceptor does for unary ones: the error a
// handler returns is replaced by its Status, and a denial sets the
// PushbackTrailer trailer. A generated wrapper decides a streaming method
// once, before calling it, so a denied call ends the stream before its
// first message.
func StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, ss)
		if err == nil {
			return nil
		}
		st, ok := Status(err)
		if !ok {
			return err
		}
		if md, ok := pushback(err); ok {
			ss.SetTrailer(md)
		}
		return st.Err()
	}
}

// pushback returns the PushbackTrailer trailer for the denial in err, and
// false when err holds no *runtime.LimitError, whose wait alone is known,
// or one of a concurrency limit, whose wait is not.
func pushback(err error) (metadata.MD, bool) {
	var le *runtime.LimitError
	if !errors.As(err, &le) || inFlight(le) {
		return nil, false
	}
	return metadata.Pairs(PushbackTrailer, strconv.FormatInt(pushbackMillis(le.Decision.RetryAfter), 10)), true
}

// pushbackMillis is d in whole milliseconds, rounded up so that a client
// that waits that long is never early, and at least 1, since 0 would make
// a client retry at once into the same denial.
func pushbackMillis(d time.Duration) int64 {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond > 0 {
		ms++
	}
	return max(ms, 1)
}
