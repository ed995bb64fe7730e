package ratelimitconnect

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Error returns the Connect error that answers err, if err is a rate-limit
// outcome, and reports whether it is one. Errors are matched through
// wrapping:
//
//   - a *connect.Error, or an error wrapping one: nil and false, whatever
//     it wraps, since the handler chose its code;
//   - a *runtime.LimitError: connect.CodeResourceExhausted with the
//     message "Too many requests for NAME: at most MAX per WINDOW. Retry
//     in N s." (N is the wait in whole seconds, rounded up, at least 1), a
//     google.rpc.RetryInfo detail whose retry_delay is the denial's
//     Decision.RetryAfter exactly (0 if negative),
//     and a google.rpc.QuotaFailure detail with one violation whose
//     subject and quota_id are the limit's name and whose quota_value is
//     its Max. Its metadata holds Retry-After (the N of the message) and
//     the RateLimit-Policy and RateLimit fields of ratelimithttp.SetHeaders.
//     A LimitError whose Limit is invalid (Limit.Validate) gets the
//     RetryInfo, Retry-After, a message without the limit, and no
//     QuotaFailure. A denial by a concurrency limit has the message and
//     details of extra/ratelimitgrpc's, and no Retry-After;
//   - another error matching runtime.ErrLimited: CodeResourceExhausted
//     with a generic message and no details, as it carries no wait;
//   - an error matching runtime.ErrUnavailable (the limiter could not
//     decide): connect.CodeUnavailable, never CodeResourceExhausted;
//   - nil or any other error: nil and false, so the caller answers it as
//     it would without rate limiting.
//
// The error never contains the key or err's text. The codes, messages and
// details are those of extra/ratelimitgrpc's Status.
func Error(err error) (*connect.Error, bool) {
	if err == nil {
		return nil, false
	}
	var ce *connect.Error
	var le *runtime.LimitError
	switch {
	case errors.As(err, &ce):
		return nil, false
	case errors.As(err, &le):
		return limitedError(le), true
	case errors.Is(err, runtime.ErrLimited):
		return connect.NewError(connect.CodeResourceExhausted, errors.New("Too many requests. Retry later.")), true
	case errors.Is(err, runtime.ErrUnavailable):
		return connect.NewError(connect.CodeUnavailable, errors.New("The rate limiter could not decide whether to accept this request, so it was not processed. Please retry later.")), true
	default:
		return nil, false
	}
}

// limitedError is the CodeResourceExhausted error of the denial e; see
// Error.
func limitedError(e *runtime.LimitError) *connect.Error {
	if l := e.Limit; l.Algorithm == runtime.Concurrency && l.Validate() == nil {
		return inFlightError(e)
	}
	wait := max(e.Decision.RetryAfter, 0)
	retry := retryAfterSeconds(wait)
	msg := fmt.Sprintf("Too many requests. Retry in %d s.", retry)
	details := []proto.Message{&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)}}
	if l := e.Limit; l.Validate() == nil {
		what := fmt.Sprintf("Too many requests for %s: at most %d per %v.", l.Name, l.Max, l.Window)
		msg = fmt.Sprintf("%s Retry in %d s.", what, retry)
		details = append(details, &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     l.Name,
			Description: what,
			QuotaId:     l.Name,
			QuotaValue:  int64(l.Max),
		}}})
	}
	ce := connect.NewError(connect.CodeResourceExhausted, errors.New(msg))
	// The HTTP fields a 429 carries, for clients and proxies that read
	// headers rather than details: the error's metadata travels as
	// response headers (Connect) or trailers (gRPC, gRPC-Web).
	ce.Meta().Set("Retry-After", strconv.FormatInt(retry, 10))
	ratelimithttp.SetHeaders(ce.Meta(), e.Limit, e.Decision)
	addDetails(ce, details)
	return ce
}

// inFlightError is the CodeResourceExhausted error of a denial by a
// concurrency limit: no RetryInfo and no Retry-After, since a permit comes
// back when a call in flight ends, which nothing predicts.
func inFlightError(e *runtime.LimitError) *connect.Error {
	l := e.Limit
	what := fmt.Sprintf("Too many requests in flight for %s: at most %d at once.", l.Name, l.Max)
	ce := connect.NewError(connect.CodeResourceExhausted, errors.New(what+" Retry once one ends."))
	ratelimithttp.SetHeaders(ce.Meta(), l, e.Decision)
	addDetails(ce, []proto.Message{&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     l.Name,
		Description: what,
		QuotaId:     l.Name,
		QuotaValue:  int64(l.Max),
	}}}})
	return ce
}

// addDetails adds details to ce.
func addDetails(ce *connect.Error, details []proto.Message) {
	for _, m := range details {
		d, err := connect.NewErrorDetail(m)
		if err != nil {
			// NewErrorDetail fails only for a message that cannot be
			// marshalled, which these cannot be; the message alone
			// still answers the call.
			continue
		}
		ce.AddDetail(d)
	}
}

// retryAfterSeconds is d in whole seconds for the message, rounded up and
// at least 1, as ratelimithttp's Retry-After: a person who waits that long
// is never early.
func retryAfterSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++ // d/time.Second is below MaxInt64, so this cannot overflow
	}
	return max(s, 1)
}

// RetryDelay returns how long the server asked the client to wait before
// it retries the call that failed with err: the retry_delay of the first
// google.rpc.RetryInfo detail of err's *connect.Error, which Error and
// NewInterceptor attach to every denial. It reports false when err is nil,
// is not a *connect.Error (errors wrapping one count), or carries no
// RetryInfo with a valid, non-negative delay.
//
//	_, err := client.CallUnary(ctx, req)
//	if d, ok := ratelimitconnect.RetryDelay(err); ok {
//		// wait d before calling again
//	}
func RetryDelay(err error) (time.Duration, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return 0, false
	}
	for _, d := range ce.Details() {
		v, err := d.Value()
		if err != nil {
			continue // a detail of a type this binary does not know
		}
		ri, ok := v.(*errdetails.RetryInfo)
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
