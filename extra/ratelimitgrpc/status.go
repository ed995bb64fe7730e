package ratelimitgrpc

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// Status returns the gRPC status that answers err, if err is a rate-limit
// outcome, and reports whether it is one. Errors are matched through
// wrapping:
//
//   - a *runtime.LimitError: codes.ResourceExhausted with the message
//     "Too many requests for NAME: at most MAX per WINDOW. Retry in N s."
//     (N is the wait in whole seconds, rounded up, at least 1), a
//     google.rpc.RetryInfo detail whose retry_delay is the denial's
//     Decision.RetryAfter exactly (0 if negative), and a
//     google.rpc.QuotaFailure detail with one violation whose subject and
//     quota_id are the limit's name and whose quota_value is its Max. A
//     LimitError whose Limit is invalid (Limit.Validate) gets the
//     RetryInfo, a message without the limit, and no QuotaFailure. A
//     denial by a concurrency limit says "Too many requests in flight for
//     NAME: at most MAX at once. Retry once one ends.", with the
//     QuotaFailure and no RetryInfo: nothing predicts when a call in
//     flight ends;
//   - another error matching runtime.ErrLimited: codes.ResourceExhausted
//     with a generic message and no details, as it carries no wait;
//   - an error matching runtime.ErrUnavailable (the limiter could not
//     decide): codes.Unavailable, never ResourceExhausted;
//   - nil or any other error, gRPC status errors included: nil and false,
//     so the caller answers it as it would without rate limiting.
//
// The status never contains the key or the error's text.
func Status(err error) (*status.Status, bool) {
	if err == nil {
		return nil, false
	}
	var le *runtime.LimitError
	switch {
	case errors.As(err, &le):
		return limitedStatus(le), true
	case errors.Is(err, runtime.ErrLimited):
		return status.New(codes.ResourceExhausted, "Too many requests. Retry later."), true
	case errors.Is(err, runtime.ErrUnavailable):
		return status.New(codes.Unavailable, "The rate limiter could not decide whether to accept this request, so it was not processed. Please retry later."), true
	default:
		return nil, false
	}
}

// limitedStatus is the ResourceExhausted status of the denial e; see
// Status.
func limitedStatus(e *runtime.LimitError) *status.Status {
	if inFlight(e) {
		return inFlightStatus(e.Limit)
	}
	wait := max(e.Decision.RetryAfter, 0)
	retry := retryAfterSeconds(wait)
	msg := fmt.Sprintf("Too many requests. Retry in %d s.", retry)
	var quota *errdetails.QuotaFailure
	if l := e.Limit; l.Validate() == nil {
		what := fmt.Sprintf("Too many requests for %s: at most %d per %v.", l.Name, l.Max, l.Window)
		msg = fmt.Sprintf("%s Retry in %d s.", what, retry)
		quota = &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     l.Name,
			Description: what,
			QuotaId:     l.Name,
			QuotaValue:  int64(l.Max),
		}}}
	}
	details := []protoadapt.MessageV1{&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)}}
	if quota != nil {
		details = append(details, quota)
	}
	st := status.New(codes.ResourceExhausted, msg)
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		// WithDetails fails only for a status with code OK or a detail
		// that cannot be marshalled, neither of which can happen here;
		// the message alone still answers the call.
		return st
	}
	return withDetails
}

// inFlight reports whether e is a denial by a valid concurrency limit.
func inFlight(e *runtime.LimitError) bool {
	return e.Limit.Algorithm == runtime.Concurrency && e.Limit.Validate() == nil
}

// inFlightStatus is the ResourceExhausted status of a denial by the
// concurrency limit l: no RetryInfo, since a permit comes back when a call
// in flight ends, which nothing predicts.
func inFlightStatus(l runtime.Limit) *status.Status {
	what := fmt.Sprintf("Too many requests in flight for %s: at most %d at once.", l.Name, l.Max)
	st := status.New(codes.ResourceExhausted, what+" Retry once one ends.")
	withDetails, err := st.WithDetails(&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     l.Name,
		Description: what,
		QuotaId:     l.Name,
		QuotaValue:  int64(l.Max),
	}}})
	if err != nil {
		// As in limitedStatus, this cannot fail.
		return st
	}
	return withDetails
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
