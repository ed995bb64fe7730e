package runtime

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Operate returns a Limiter that decides through lim with what operators
// need at run time: overrides of limits by name (WithOverrides) and
// observers told of every decision (WithObserver). Modes are lim's to
// apply, as every Limiter's Decide does; an override may change them.
// Without options it decides as lim does.
//
// Wrap lim once, outermost: the Limiter it returns is what generated
// wrappers and ratelimithttp should be given.
func Operate(lim Limiter, opts ...OperateOption) Limiter {
	op := &operated{next: lim}
	for _, o := range opts {
		o(op)
	}
	return op
}

// OperateOption configures Operate.
type OperateOption func(*operated)

// WithObserver adds o to the observers told of every decision, once per
// limit of the call (see Observer). A limit in ModeOff is not observed.
func WithObserver(o Observer) OperateOption {
	return func(op *operated) {
		if o != nil {
			op.observers = append(op.observers, o)
		}
	}
}

// WithLabel sets the function that gives each request's Event a Label,
// such as a customer's plan read from ctx or derived from the request's
// key. It is the one place that sees keys on the observing path; it must
// return few distinct values, as each becomes a metric series.
func WithLabel(f func(ctx context.Context, r Request) string) OperateOption {
	return func(op *operated) { op.label = f }
}

// WithOverrides makes every decision read o's current overrides: a request
// whose Limit.Name has an override is decided with the override's values,
// unless they would make it invalid (see Overrides). Reading them takes no
// lock and no I/O. Each limit decided is told to o, which then refuses
// overrides that would break it.
func WithOverrides(o *Overrides) OperateOption {
	return func(op *operated) { op.overrides = o }
}

// WithLogger sets where Operate logs what an operator must correct: an
// override not applied because it would make a limit invalid, at level
// Error, once per limit and error. nil, or no WithLogger, means
// slog.Default(). Decisions are logged by observers (NewLogObserver).
func WithLogger(l *slog.Logger) OperateOption {
	return func(op *operated) { op.logger = l }
}

type operated struct {
	next      Limiter
	observers []Observer
	label     func(context.Context, Request) string
	overrides *Overrides
	logger    *slog.Logger

	// refusals are the overrides not applied that were logged, by limit
	// name and error.
	refusalsMu sync.Mutex
	refusals   map[string]bool
}

// overridden returns reqs with the overrides in force applied, having told
// the overrides of the limits as declared.
func (op *operated) overridden(ctx context.Context, reqs []Request) []Request {
	if op.overrides == nil {
		return reqs
	}
	op.overrides.learn(reqs)
	return op.overrides.apply(reqs, func(r Request, err error) { op.refused(ctx, r, err) })
}

// maxRefusals bounds the refusals remembered for logging once.
const maxRefusals = 1000

// refused logs, once per limit and error, an override not applied to r.
func (op *operated) refused(ctx context.Context, r Request, err error) {
	key := r.Limit.Name + "\x00" + err.Error()
	op.refusalsMu.Lock()
	if op.refusals[key] || len(op.refusals) >= maxRefusals {
		op.refusalsMu.Unlock()
		return
	}
	if op.refusals == nil {
		op.refusals = make(map[string]bool)
	}
	op.refusals[key] = true
	op.refusalsMu.Unlock()
	l := op.logger
	if l == nil {
		l = slog.Default()
	}
	l.LogAttrs(ctx, slog.LevelError, "ratelimit: override not applied, as it would make the limit invalid; the limit as declared decides: correct or remove the override",
		slog.String("limit", r.Limit.Name), slog.Any("err", err))
}

// Decide implements Limiter: it applies overrides, asks the next Limiter,
// and tells the observers.
func (op *operated) Decide(ctx context.Context, reqs ...Request) (Decisions, error) {
	_, ds, err := op.decide(ctx, reqs)
	return ds, err
}

// decide returns the requests as decided, overrides applied, with their
// decisions.
func (op *operated) decide(ctx context.Context, reqs []Request) ([]Request, Decisions, error) {
	reqs = op.overridden(ctx, reqs)
	if len(op.observers) == 0 {
		return decide(ctx, op.next, reqs)
	}
	start := time.Now()
	reqs, ds, err := decide(ctx, op.next, reqs)
	op.observe(ctx, reqs, ds, err, time.Since(start))
	return reqs, ds, err
}

func (op *operated) observe(ctx context.Context, reqs []Request, ds Decisions, err error, latency time.Duration) {
	if err == nil && len(ds.Each) != len(reqs) {
		err = errInconsistent
	}
	for i, r := range reqs {
		if r.Limit.Mode == ModeOff {
			continue
		}
		ev := Event{Limit: r.Limit, Cost: r.Cost, Latency: latency, Err: err}
		if ev.Cost == 0 {
			ev.Cost = 1
		}
		if op.label != nil {
			ev.Label = op.label(ctx, r)
		}
		if err != nil {
			ev.Result = ResultError
		} else {
			d := ds.Each[i]
			ev.Source, ev.Remaining, ev.RetryAfter, ev.Err = ds.Source, d.Remaining, d.RetryAfter, ds.Cause
			switch {
			case d.Allowed:
				ev.Result = ResultAllowed
			case ds.Allowed || r.Limit.Mode == ModeShadow:
				ev.Result = ResultShadowLimited
			default:
				ev.Result = ResultLimited
			}
		}
		for _, o := range op.observers {
			o.Observe(ctx, ev)
		}
	}
}

// errInconsistent is what observers are told when a Limiter's Decisions do
// not hold one Decision per request.
var errInconsistent = errors.New("ratelimit: limiter returned a Decision count unlike its requests")

// Hold implements Holder: it decides as Decide does, through lim's Hold
// when lim is a Holder, and tells the observers of a settlement that
// fails.
func (op *operated) Hold(ctx context.Context, reqs ...Request) (Decisions, Hold, error) {
	_, ds, h, err := op.hold(ctx, reqs)
	return ds, h, err
}

// HoldWait implements WaitHolder: it decides as Hold does, waiting for
// room as the next Limiter's HoldWait does when it is a WaitHolder, and as
// Wait does otherwise (see AdmitWait). Observers are told of the last
// decision only.
func (op *operated) HoldWait(ctx context.Context, max time.Duration, reqs ...Request) (Decisions, Hold, error) {
	_, ds, h, err := op.holdWait(ctx, max, reqs)
	return ds, h, err
}

// hold is Hold, also returning the requests as decided.
func (op *operated) hold(ctx context.Context, reqs []Request) ([]Request, Decisions, Hold, error) {
	return op.holdWait(ctx, 0, reqs)
}

// holdWait is HoldWait, also returning the requests as decided; with max
// <= 0 it is Hold.
func (op *operated) holdWait(ctx context.Context, max time.Duration, reqs []Request) ([]Request, Decisions, Hold, error) {
	reqs = op.overridden(ctx, reqs)
	start := time.Now()
	reqs, ds, h, err := reserveWait(ctx, op.next, max, reqs)
	if len(op.observers) == 0 {
		return reqs, ds, h, err
	}
	op.observe(ctx, reqs, ds, err, time.Since(start))
	if h != nil {
		oh := &observedHold{op: op, reqs: reqs, ctx: context.WithoutCancel(ctx), next: h, source: ds.Source}
		h = oh
		if ph, ok := oh.next.(PermitHold); ok {
			h = observedPermitHold{oh, ph}
		}
	}
	return reqs, ds, h, err
}

// observedHold tells the observers of its settlement's failure, and of
// the release of its permits.
type observedHold struct {
	op   *operated
	reqs []Request
	// ctx is the decision's, for the observers' values.
	ctx  context.Context
	next Hold
	// source is where the call was decided.
	source Source
}

// observedPermitHold is an observedHold of a call that holds permits:
// renewing them is its next's.
type observedPermitHold struct {
	*observedHold
	next PermitHold
}

func (h observedPermitHold) Renew(ctx context.Context) error { return h.next.Renew(ctx) }
func (h observedPermitHold) HeldUntil() time.Time            { return h.next.HeldUntil() }

func (h *observedHold) Settle(ctx context.Context, used ...int64) error {
	err := h.next.Settle(ctx, used...)
	if errors.Is(err, ErrSettled) {
		return err
	}
	// A lost permit says nothing of the call's other limits, which were
	// settled.
	unsettled := err != nil && !errors.Is(err, ErrPermitLost)
	for _, r := range h.reqs {
		inFlight := r.Limit.algorithm() == Concurrency
		if r.Limit.Mode == ModeOff || !inFlight && !unsettled {
			continue
		}
		ev := Event{Limit: r.Limit, Result: ResultUnsettled, Cost: r.cost(), Err: err}
		if inFlight {
			ev.Result, ev.Source = ResultReleased, h.source
		}
		if h.op.label != nil {
			ev.Label = h.op.label(h.ctx, r)
		}
		for _, o := range h.op.observers {
			o.Observe(h.ctx, ev)
		}
	}
	return err
}

// Peek implements Peeker: it applies overrides and asks lim, which must be
// a Peeker. Observers are not told: nothing is decided.
func (op *operated) Peek(ctx context.Context, reqs ...Request) (Decisions, error) {
	reqs = op.overridden(ctx, reqs)
	return Peek(ctx, op.next, reqs...)
}

// Reset implements Resetter: it applies overrides and asks lim, which must
// be a Resetter.
func (op *operated) Reset(ctx context.Context, reqs ...Request) error {
	reqs = op.overridden(ctx, reqs)
	return Reset(ctx, op.next, reqs...)
}
