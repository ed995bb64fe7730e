package ratelimitconnect

import (
	"context"

	"connectrpc.com/connect"
)

// NewInterceptor returns an interceptor that answers the rate-limit errors
// of unary and streaming handlers with Connect errors:
//
//	mux.Handle(pbconnect.NewVerifierHandler(impl, // its methods call rate-limited ones
//		connect.WithInterceptors(ratelimitconnect.NewInterceptor())))
//
// An error a handler returns is replaced by its Error when it has one (a
// denial or a limiter failure); every other error, and every response, is
// returned unchanged. A generated wrapper decides a streaming method once,
// before calling it, so a denied stream ends before its first message.
// On the client side (in connect.WithInterceptors of a client) it does
// nothing. Place it after interceptors that log or count errors by type
// if they should see the *runtime.LimitError, before them if they should
// see the Connect code.
func NewInterceptor() connect.Interceptor { return interceptor{} }

type interceptor struct{}

func (interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		if err == nil || req.Spec().IsClient {
			return resp, err
		}
		if ce, ok := Error(err); ok {
			return nil, ce
		}
		return resp, err
	}
}

func (interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		err := next(ctx, conn)
		if ce, ok := Error(err); ok {
			return ce
		}
		return err
	}
}
