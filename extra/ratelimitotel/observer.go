package ratelimitotel

import (
	"context"
	"errors"
	"maps"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// ScopeName is the instrumentation scope (meter) name the Observer's
// instruments are created under: this module's path.
const ScopeName = "github.com/ratelimitgen/ratelimitgen/extra/ratelimitotel"

// The names of the Observer's instruments. See the package documentation
// for their units, attributes and meaning.
const (
	// DecisionsName is the counter of decisions, one per limit per call.
	DecisionsName = "ratelimitgen.decisions"
	// DecisionDurationName is the histogram of the time calls took to
	// decide, in seconds.
	DecisionDurationName = "ratelimitgen.decision.duration"
	// NearLimitDecisionsName is the counter of admitted hits that left at
	// most a fifth of the limit's capacity (runtime.Event.NearLimit).
	NearLimitDecisionsName = "ratelimitgen.near_limit_decisions"
)

// The attribute keys the Observer's measurements carry.
const (
	// LimitNameKey is the limit's Name, such as "Notifier.SendCode".
	LimitNameKey = attribute.Key("ratelimitgen.limit.name")
	// ResultKey is runtime.Result.String(): "allowed", "limited",
	// "shadow-limited" or "error".
	ResultKey = attribute.Key("ratelimitgen.result")
	// SourceKey is runtime.Source.String(): "store", "deny-cache",
	// "fallback", "fail-open" or "lease". It is absent when the result is "error",
	// for which the source is meaningless.
	SourceKey = attribute.Key("ratelimitgen.source")
	// ErrorTypeKey is OpenTelemetry's error.type, present only when the
	// result is "error": "timeout", "canceled", "unavailable",
	// "invalid_cost" or "_OTHER" (see the package documentation).
	ErrorTypeKey = attribute.Key("error.type")
)

// The error.type values, from the error of an event whose result is
// "error", tested in this order.
const (
	errTypeTimeout     = "timeout"      // errors.Is(err, context.DeadlineExceeded)
	errTypeCanceled    = "canceled"     // errors.Is(err, context.Canceled)
	errTypeInvalidCost = "invalid_cost" // errors.Is(err, runtime.ErrInvalidCost)
	errTypeUnavailable = "unavailable"  // errors.Is(err, runtime.ErrUnavailable)
	errTypeOther       = "_OTHER"       // anything else
)

// defaultDurationBoundaries are the duration histogram's bucket boundaries
// in seconds: 1, 2.5 and 5 times each power of ten from 100ns, for
// in-process decisions, through 1s, past the ~100ms timeouts of a limiter
// backed by Redis (round trips of ~100µs to a few ms fall in between).
var defaultDurationBoundaries = []float64{
	100e-9, 250e-9, 500e-9,
	1e-6, 2.5e-6, 5e-6,
	10e-6, 25e-6, 50e-6,
	100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3,
	10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3,
	1,
}

// maxCachedSets bounds the attribute sets an Observer keeps. Steady-state
// programs have far fewer (limits × results × sources × labels); past the
// bound, measurements of new combinations build their set each time,
// which allocates but stays correct.
const maxCachedSets = 4096

// Option configures New.
type Option func(*config)

type config struct {
	provider   metric.MeterProvider
	labelKey   attribute.Key
	boundaries []float64
}

// WithMeterProvider sets the MeterProvider the instruments are created
// with. The default is otel.GetMeterProvider(), the global one, at the
// time New is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.provider = mp }
}

// WithLabelAttribute records runtime.Event.Label, the label chosen by
// runtime.WithLabel, under the attribute key, such as "app.customer.plan".
// Events with an empty Label carry no such attribute. Without this option
// labels are not recorded. Each distinct label multiplies the number of
// series, so the label function must return few values.
func WithLabelAttribute(key string) Option {
	return func(c *config) { c.labelKey = attribute.Key(key) }
}

// WithDurationBoundaries advises the bucket boundaries, in seconds, of the
// duration histogram in place of the default ones (100ns through 1s; see
// the package documentation). A view configured in the MeterProvider still
// takes precedence.
func WithDurationBoundaries(bounds ...float64) Option {
	return func(c *config) { c.boundaries = append([]float64(nil), bounds...) }
}

// Observer is a runtime.Observer that records decisions as OpenTelemetry
// metrics. Create it with New and pass it to runtime.Operate with
// runtime.WithObserver. It is safe for concurrent use.
type Observer struct {
	decisions metric.Int64Counter
	nearLimit metric.Int64Counter
	duration  metric.Float64Histogram
	labelKey  attribute.Key

	// read maps combinations of attributes to their measurement options;
	// it is never written once published, so that Observe reads it without
	// a lock or an allocation. dirty holds every combination cached, read's
	// and the ones added since; misses counts the reads of dirty since read
	// was last published. See options.
	read   atomic.Pointer[map[setKey]*measurementOptions]
	mu     sync.Mutex
	dirty  map[setKey]*measurementOptions
	misses int
}

var _ runtime.Observer = (*Observer)(nil)

// setKey identifies one attribute set.
type setKey struct {
	limit   string
	label   string
	errType string
	result  runtime.Result
	source  runtime.Source
}

// measurementOptions holds one attribute set as the variadic arguments of
// Add and Record, built once so that passing them allocates nothing.
type measurementOptions struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// New returns an Observer whose instruments are created by the
// MeterProvider of WithMeterProvider, or by the global one, under the
// meter named ScopeName. It returns an error if an instrument cannot be
// created.
func New(opts ...Option) (*Observer, error) {
	c := config{boundaries: defaultDurationBoundaries}
	for _, o := range opts {
		o(&c)
	}
	if c.provider == nil {
		c.provider = otel.GetMeterProvider()
	}
	var meterOpts []metric.MeterOption
	if v := moduleVersion(); v != "" {
		meterOpts = append(meterOpts, metric.WithInstrumentationVersion(v))
	}
	meter := c.provider.Meter(ScopeName, meterOpts...)

	o := &Observer{labelKey: c.labelKey}
	var err, e error
	o.decisions, e = meter.Int64Counter(DecisionsName,
		metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions made by rate limits, one for each limit of each call."))
	err = errors.Join(err, e)
	o.nearLimit, e = meter.Int64Counter(NearLimitDecisionsName,
		metric.WithUnit("{decision}"),
		metric.WithDescription("Admitted decisions that left at most a fifth of the limit's capacity."))
	err = errors.Join(err, e)
	o.duration, e = meter.Float64Histogram(DecisionDurationName,
		metric.WithUnit("s"),
		metric.WithDescription("Time the calls that a rate limit took part in took to decide."),
		metric.WithExplicitBucketBoundaries(c.boundaries...))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Observe implements runtime.Observer: it adds 1 to the decisions counter,
// 1 to the near-limit counter when ev.NearLimit(), and records ev.Latency
// in the duration histogram, all with the event's attributes.
func (o *Observer) Observe(ctx context.Context, ev runtime.Event) {
	k := setKey{limit: ev.Limit.Name, result: ev.Result}
	if ev.Result == runtime.ResultError || ev.Result == runtime.ResultUnsettled {
		k.errType = errorType(ev.Err)
	} else {
		k.source = ev.Source
	}
	if o.labelKey != "" {
		k.label = ev.Label
	}
	m := o.options(k)
	o.decisions.Add(ctx, 1, m.add...)
	if ev.NearLimit() {
		o.nearLimit.Add(ctx, 1, m.add...)
	}
	if ev.Result != runtime.ResultUnsettled && ev.Result != runtime.ResultReleased {
		// A failed settlement or a release is no decision: it took no
		// decision's time.
		o.duration.Record(ctx, ev.Latency.Seconds(), m.record...)
	}
}

// options returns k's measurement options, building them on the first
// use of k. Reads find them in o.read without a lock; sets not there yet
// are kept in o.dirty, which is published to o.read, copied whole, once
// there have been as many reads of o.dirty since the last copy as o.read
// holds sets: as sync.Map does, this keeps the copying to a constant
// amount per set cached.
func (o *Observer) options(k setKey) *measurementOptions {
	read := o.read.Load()
	if read != nil {
		if m, ok := (*read)[k]; ok {
			return m
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	read = o.read.Load()
	if read != nil {
		if m, ok := (*read)[k]; ok {
			return m
		}
	}
	m, ok := o.dirty[k]
	if !ok {
		if len(o.dirty) >= maxCachedSets {
			return o.build(k)
		}
		m = o.build(k)
		if o.dirty == nil {
			o.dirty = make(map[setKey]*measurementOptions)
		}
		o.dirty[k] = m
	}
	o.misses++
	if read == nil || o.misses >= len(*read) {
		published := maps.Clone(o.dirty)
		o.read.Store(&published)
		o.misses = 0
	}
	return m
}

// build makes k's attribute set and its measurement options.
func (o *Observer) build(k setKey) *measurementOptions {
	kvs := make([]attribute.KeyValue, 0, 4)
	kvs = append(kvs, LimitNameKey.String(k.limit), ResultKey.String(k.result.String()))
	if k.result == runtime.ResultError || k.result == runtime.ResultUnsettled {
		kvs = append(kvs, ErrorTypeKey.String(k.errType))
	} else {
		kvs = append(kvs, SourceKey.String(k.source.String()))
	}
	if o.labelKey != "" && k.label != "" {
		kvs = append(kvs, o.labelKey.String(k.label))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
	return &measurementOptions{
		add:    []metric.AddOption{opt},
		record: []metric.RecordOption{opt},
	}
}

// errorType classifies err into one of a few error.type values, so that
// errors add few series whatever their messages.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errTypeTimeout
	case errors.Is(err, context.Canceled):
		return errTypeCanceled
	case errors.Is(err, runtime.ErrInvalidCost):
		return errTypeInvalidCost
	case errors.Is(err, runtime.ErrUnavailable):
		return errTypeUnavailable
	}
	return errTypeOther
}

// moduleVersion returns this module's version as the binary's build
// information records it, or "" when it records none.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if bi.Main.Path == ScopeName {
		return cleanVersion(bi.Main.Version)
	}
	for _, d := range bi.Deps {
		if d.Path != ScopeName {
			continue
		}
		if d.Replace != nil {
			return cleanVersion(d.Replace.Version)
		}
		return cleanVersion(d.Version)
	}
	return ""
}

func cleanVersion(v string) string {
	if v == "(devel)" {
		return ""
	}
	return v
}
