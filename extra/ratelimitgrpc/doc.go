// Package ratelimitgrpc turns rate-limit decisions into gRPC statuses: the
// server side of a service whose methods are ratelimitgen wrappers, and the
// client side that backs off as the server asks. It works with any
// runtime.Limiter and imports no backend.
//
// # Which function to call
//
//   - UnaryServerInterceptor and StreamServerInterceptor, on a grpc.Server
//     whose handlers call rate-limited methods (such as a generated
//     RateLimitedXxxServer): they answer denials and limiter failures with
//     the statuses below, and leave every other error as it is.
//   - Status, to translate an error yourself, in a handler or an
//     interceptor of your own.
//   - RetryDelay, in a client, to read how long the server asked it to
//     wait.
//   - NewMethodLimiter, to limit whole methods without code generation,
//     one runtime.Limit per full method name, per client address (ByPeer,
//     keyed as ratelimithttp.ByClientIP keys HTTP requests: IPv6 by its
//     /64), per metadata entry (ByMetadata) or per any KeyFunc.
//
// # Statuses
//
// A denied call (a *runtime.LimitError) answers RESOURCE_EXHAUSTED with a
// message naming the limit and the wait, and two details of
// google/rpc/error_details.proto, as AIP-193 describes them:
//
//	code:    RESOURCE_EXHAUSTED
//	message: Too many requests for Verifier.SendCode: at most 3 per 1m0s. Retry in 42 s.
//	details: google.rpc.RetryInfo{retry_delay: 41.2s}
//	         google.rpc.QuotaFailure{violations: [{subject: "Verifier.SendCode",
//	             quota_id: "Verifier.SendCode", quota_value: 3,
//	             description: "Too many requests for Verifier.SendCode: at most 3 per 1m0s."}]}
//	trailer: grpc-retry-pushback-ms: 41200   (interceptors only)
//
// retry_delay is the denial's RetryAfter exactly, never rounded down, so a
// client that waits that long finds room unless others took it first. The
// interceptors also set the grpc-retry-pushback-ms trailer of gRFC A6
// (client retries), in whole milliseconds rounded up: a grpc-go client
// whose service config retries RESOURCE_EXHAUSTED waits that long instead
// of its own backoff. Without such a config grpc-go does not retry, and
// RetryDelay reads the same wait from RetryInfo.
//
// A limiter that could not decide (an error matching
// runtime.ErrUnavailable, for example Redis unreachable under
// redislimit.FailClosed) answers UNAVAILABLE, never RESOURCE_EXHAUSTED: the
// client did nothing wrong and its quota is unknown. UNAVAILABLE is the
// code gRPC clients treat as safe to retry.
//
// No status, detail or trailer ever contains the rate-limit key, which often
// holds personal data such as an e-mail or IP address, nor the limiter's
// error text, which describes the server's infrastructure.
//
// # Limits declared in .proto files
//
// protoc-gen-go-grpc copies an rpc's leading comment into the generated
// XxxServer and XxxClient interfaces, so a //ratelimit: line above an rpc
// reaches *_grpc.pb.go, and ratelimitgen wraps both interfaces (it forwards
// XxxServer's unexported mustEmbedUnimplementedXxxServer method). A
// directive names the request in, as the client interface does; the server
// interface's parameters have no names, and ratelimitgen names them the
// same way (ctx, in, in2, ...), so key=in.GetEmail() means one thing in
// both. A streaming method, which has no context parameter, is decided
// with its stream's context. internal/verifypb is the example.
//
// This package is a module of its own, so that the ratelimitgen core does
// not depend on gRPC.
package ratelimitgrpc
