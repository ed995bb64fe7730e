// Package ratelimitconnect turns rate-limit decisions into Connect errors,
// for connect-go (connectrpc.com/connect) services whose handlers call
// rate-limited methods, such as ratelimitgen's generated wrappers, and for
// their clients, which read how long to wait. It works with any
// runtime.Limiter and imports no backend.
//
// # Which function to call
//
//   - NewInterceptor, passed to a handler constructor with
//     connect.WithInterceptors: it answers the denials and limiter
//     failures of unary and streaming handlers with the errors below, and
//     leaves every other error as it is.
//   - Error, to translate an error yourself.
//   - RetryDelay, in a client, to read how long the server asked it to
//     wait.
//
// A limit per client address keys a call with ratelimithttp.ClientIPKey,
// given req.Peer().Addr and req.Header().Values: the key HTTP and
// extra/ratelimitgrpc give the same client, IPv6 by its /64.
//
// # Errors
//
// A denied call (a *runtime.LimitError) answers resource_exhausted, which
// the Connect protocol sends as HTTP 429, with a message naming the limit
// and the wait, and two details of google/rpc/error_details.proto, as
// extra/ratelimitgrpc sends them:
//
//	code:    resource_exhausted
//	message: Too many requests for Verifier.SendCode: at most 3 per 1m0s. Retry in 42 s.
//	details: google.rpc.RetryInfo{retry_delay: 41.2s}
//	         google.rpc.QuotaFailure{violations: [{subject: "Verifier.SendCode",
//	             quota_id: "Verifier.SendCode", quota_value: 3,
//	             description: "Too many requests for Verifier.SendCode: at most 3 per 1m0s."}]}
//
// retry_delay is the denial's RetryAfter exactly, as extra/ratelimitgrpc
// sends it, so a client that waits that long finds room unless others took
// it first. A handler that returns the *runtime.LimitError
// without the interceptor answers unknown, and a bare HTTP 429 without a
// Connect error body reaches Connect clients as unavailable: neither
// carries the wait.
//
// A limiter that could not decide (an error matching
// runtime.ErrUnavailable, for example Redis unreachable under
// redislimit.FailClosed) answers unavailable, never resource_exhausted:
// the client did nothing wrong and its quota is unknown.
//
// No error or detail ever contains the rate-limit key, which often holds
// personal data such as an e-mail or IP address, nor the limiter's error
// text, which describes the server's infrastructure.
//
// This package is a module of its own, so that the ratelimitgen core does
// not depend on connect-go.
package ratelimitconnect
