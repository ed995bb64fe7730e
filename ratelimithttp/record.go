package ratelimithttp

import (
	"context"
	"sync"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A generated wrapper returns only an error: a denial carries its Decision
// in the *runtime.LimitError, but an admitted call says nothing of the quota
// it left. The request's context, which handlers already pass to the
// wrapper, carries that quota to the response instead, so neither the
// wrapper's signature nor the handler's code has to change: QuotaHeaders
// puts a recorder in the context, and the limiter RecordDecisions returns
// fills it.

// RecordDecisions returns a runtime.Limiter that passes every call to lim
// unchanged and, when the call's context comes from a request served by
// QuotaHeaders, records the decisions lim took there, so that QuotaHeaders
// can advertise them on the response. Give it to generated constructors in
// place of lim:
//
//	limiter := ratelimithttp.RecordDecisions(redislimit.New(client))
//	codes := notify.NewRateLimitedCodeService(svc, limiter)
//
// Every limit of a call is recorded, denied or not; a call that ends in an
// error (no decision was taken) records nothing, and neither does a call
// whose context has no recorder. Decisions, costs and errors are lim's, so
// the returned limiter can stand in for lim everywhere: it holds, peeks and
// resets through lim too (see runtime.Holder).
//
// RecordDecisions(RecordDecisions(lim)) records once. It panics if lim is
// nil, so that a wiring mistake stops the program at start-up.
func RecordDecisions(lim runtime.Limiter) runtime.Limiter {
	switch lim.(type) {
	case nil:
		panic("ratelimithttp: RecordDecisions: nil Limiter; pass e.g. memlimit.New()")
	case recordingLimiter:
		return lim
	}
	return recordingLimiter{next: lim}
}

type recordingLimiter struct{ next runtime.Limiter }

// Decide implements runtime.Limiter.
func (l recordingLimiter) Decide(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	ds, err := l.next.Decide(ctx, reqs...)
	if err == nil {
		recorderFrom(ctx).record(reqs, ds.Each)
	}
	return ds, err
}

// Hold implements runtime.Holder, recording as Decide does; settling the
// call is lim's (see runtime.Reserve).
func (l recordingLimiter) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	ds, h, err := runtime.Reserve(ctx, l.next, reqs...)
	if err == nil {
		recorderFrom(ctx).record(reqs, ds.Each)
	}
	return ds, h, err
}

// Peek implements runtime.Peeker through lim, recording nothing.
func (l recordingLimiter) Peek(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Peek(ctx, l.next, reqs...)
}

// Reset implements runtime.Resetter through lim.
func (l recordingLimiter) Reset(ctx context.Context, reqs ...runtime.Request) error {
	return runtime.Reset(ctx, l.next, reqs...)
}

// limitDecision is a decision a limiter took for one limit during a
// request.
type limitDecision struct {
	limit    runtime.Limit
	decision runtime.Decision
}

type recorderKey struct{}

// recorder holds the latest decision for each limit name, in the order the
// names were first decided. Keeping one entry per name bounds its size by
// the number of limits, however many calls a long request makes, and it is
// what the RateLimit fields can show: one item per policy.
//
// A handler may call rate-limited methods from several goroutines, so the
// list is guarded by mu.
type recorder struct {
	mu   sync.Mutex
	list []limitDecision
}

func recorderFrom(ctx context.Context) *recorder {
	rec, _ := ctx.Value(recorderKey{}).(*recorder)
	return rec
}

// withRecorder returns ctx carrying rec.
func withRecorder(ctx context.Context, rec *recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

// record stores each[i] as the latest decision for reqs[i].Limit. A nil rec
// records nothing, and so does a limiter's answer that does not hold one
// decision per request.
func (rec *recorder) record(reqs []runtime.Request, each []runtime.Decision) {
	if rec == nil || len(each) != len(reqs) {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, r := range reqs {
		rec.put(limitDecision{limit: r.Limit, decision: each[i]})
	}
}

func (rec *recorder) put(ld limitDecision) {
	for i := range rec.list {
		if rec.list[i].limit.Name == ld.limit.Name {
			rec.list[i] = ld
			return
		}
	}
	rec.list = append(rec.list, ld)
}

// snapshot returns a copy of the decisions recorded so far.
func (rec *recorder) snapshot() []limitDecision {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]limitDecision(nil), rec.list...)
}
