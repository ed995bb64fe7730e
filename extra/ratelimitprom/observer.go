package ratelimitprom

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// DefaultNamespace is the namespace, the first part of every metric name,
// that NewObserver uses without WithNamespace.
const DefaultNamespace = "ratelimit"

// SourceNone is the source label value of decisions whose result is
// "error" or "unsettled": no part of the Limiter made a decision, so
// Event.Source is meaningless and is not reported.
const SourceNone = "none"

// DefaultBuckets are the upper bounds, in seconds, of the decision-duration
// histogram's buckets when WithBuckets is not given: 1, 2.5 and 5 times each
// power of ten from 100ns to 250ms. They resolve decisions made in process
// (a memlimit.Limiter or the deny cache of runtime/redislimit, hundreds of
// nanoseconds), round trips to Redis (hundreds of microseconds to a few
// milliseconds) and calls that end on a client timeout (tens to hundreds of
// milliseconds). Slower decisions fall in the +Inf bucket.
var DefaultBuckets = []float64{
	100e-9, 250e-9, 500e-9,
	1e-6, 2.5e-6, 5e-6,
	10e-6, 25e-6, 50e-6,
	100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3,
	10e-3, 25e-3, 50e-3,
	100e-3, 250e-3,
}

// Option configures NewObserver.
type Option func(*config)

type config struct {
	namespace string
	label     string
	buckets   []float64
}

// WithNamespace sets the namespace that every metric name begins with, in
// place of DefaultNamespace: WithNamespace("myapp") exports
// myapp_decisions_total and so on. An empty namespace leaves the names
// without a prefix (decisions_total). A namespace that makes the names
// invalid (one that is not valid UTF-8) makes registering the Observer
// fail. Names outside [a-zA-Z0-9_:] are valid in the client's default UTF-8
// validation, but need quoting in PromQL and break GrafanaDashboard's
// queries: keep to letters, digits and underscores.
func WithNamespace(namespace string) Option {
	return func(c *config) { c.namespace = namespace }
}

// WithLabel adds a label named name to ratelimit_decisions_total and
// ratelimit_near_limit_total, whose value is each Event's Label (see
// runtime.WithLabel), such as WithLabel("plan") for a customer's plan. An
// event with an empty Label has the label empty, which Prometheus treats
// as absent. The duration histogram does not get the label: a decision's
// latency depends on the store, not on the request, and every label value
// would multiply the histogram's series by its buckets.
//
// Without WithLabel, or with an empty name, Event.Label is ignored. A name
// that the Prometheus client rejects, such as one beginning with "__" (a
// reserved prefix), or one that is "limit", "result" or "source", makes
// registering the Observer fail. Keep to letters, digits and underscores,
// so that PromQL can name the label unquoted.
func WithLabel(name string) Option {
	return func(c *config) { c.label = name }
}

// WithBuckets sets the upper bounds, in seconds and increasing, of the
// decision-duration histogram's buckets, in place of DefaultBuckets.
// NewObserver panics if they do not strictly increase (the Prometheus
// client would panic on the first Observe instead).
func WithBuckets(buckets []float64) Option {
	return func(c *config) { c.buckets = append([]float64(nil), buckets...) }
}

// Observer counts and times the decisions of a Limiter returned by
// runtime.Operate. It implements runtime.Observer and prometheus.Collector;
// register it once with a prometheus.Registerer to export its metrics.
// Named after the default namespace, they are:
//
//   - ratelimit_decisions_total{limit, result, source}: a counter of
//     events, that is of limits decided: one per limit of each call (a
//     limit in runtime.ModeOff is not decided and not counted). limit is
//     Event.Limit.Name; result is Event.Result.String(): "allowed",
//     "limited", "shadow-limited", "error", "unsettled" (a settlement
//     that failed, see runtime.Hold) or "released" (a call of a
//     concurrency limit settled, see runtime.ResultReleased), which the
//     duration histogram leaves out; source is Event.Source.String(): "store", "deny-cache",
//     "fallback", "fail-open" or "lease", or SourceNone ("none") when the
//     result is "error" or "unsettled". It
//     counts events, not units: a call of Cost 5 adds 1.
//   - ratelimit_decision_duration_seconds{limit}: a histogram of
//     Event.Latency, in seconds, of every event, errors included. The
//     latency is that of the whole call: a call with several limits reports
//     one event per limit, all with the call's latency, so each limit's
//     histogram is that of the calls that included it, its _count equals
//     the sum of ratelimit_decisions_total over result and source for the
//     limit, and summing the histogram over limits counts a call once per
//     limit, not once.
//   - ratelimit_near_limit_total{limit}: a counter of the events for which
//     Event.NearLimit reports true: an admitted hit that left at most a
//     fifth of the limit's capacity, as envoy's near_limit counts.
//     Denials, shadow denials and errors do not count.
//   - ratelimit_permits_in_use{limit}: a gauge, for each concurrency limit
//     (runtime.Concurrency), of the permits this instance's calls hold: its
//     admitted and shadow-limited events less its released ones, leaving
//     out calls admitted without a decision (source "fail-open"). Summed
//     over instances, it is the calls in flight, which never exceeds the
//     limit's Max but for calls whose context says runtime.ErrPermitLost.
//
// WithLabel adds one label to the two counters and the gauge. A series appears with the
// first event it counts, and then remains; the near-limit counter of a limit
// (and label) appears with the limit's first event, at 0 if that event was
// not near the limit.
//
// Observe allocates nothing once a combination of limit, result, source and
// label has been seen: it keeps the metric children of each combination.
// It is safe for concurrent use.
type Observer struct {
	labelled  bool
	decisions *prometheus.CounterVec
	durations *prometheus.HistogramVec
	nearLimit *prometheus.CounterVec
	inUse     *prometheus.GaugeVec
	// children holds a map from every seriesKey seen to its series. The
	// map is never written once stored: newSeries stores a copy with one
	// more entry, under mu. Reads take no lock and hash the key with the
	// map's own hash function, which is faster than sync.Map's hash of an
	// interface value.
	children atomic.Pointer[map[seriesKey]*series]
	mu       sync.Mutex
}

// seriesKey identifies the metric children that one Event updates.
type seriesKey struct {
	limit  string
	label  string
	result runtime.Result
	source runtime.Source // 0 when result is ResultError
}

// series holds the metric children of a seriesKey.
type series struct {
	decision  prometheus.Counter
	duration  prometheus.Observer
	nearLimit prometheus.Counter
	// inUse is nil but for a concurrency limit.
	inUse prometheus.Gauge
}

var (
	_ runtime.Observer     = (*Observer)(nil)
	_ prometheus.Collector = (*Observer)(nil)
)

// NewObserver returns an Observer configured by opts, with no series yet.
// It panics if WithBuckets was given bounds that do not strictly increase.
func NewObserver(opts ...Option) *Observer {
	c := config{namespace: DefaultNamespace, buckets: DefaultBuckets}
	for _, o := range opts {
		o(&c)
	}
	for i := 1; i < len(c.buckets); i++ {
		if !(c.buckets[i-1] < c.buckets[i]) {
			panic(fmt.Sprintf("ratelimitprom: WithBuckets(%v): bounds must strictly increase", c.buckets))
		}
	}
	counterLabels := []string{"limit", "result", "source"}
	nearLabels := []string{"limit"}
	if c.label != "" {
		counterLabels = append(counterLabels, c.label)
		nearLabels = append(nearLabels, c.label)
	}
	return &Observer{
		labelled: c.label != "",
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: c.namespace,
			Name:      "decisions_total",
			Help:      "Rate-limit decisions, one per limit of each call, by limit, result and source (none for errors).",
		}, counterLabels),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: c.namespace,
			Name:      "decision_duration_seconds",
			Help:      "How long rate-limit calls took to decide, all their limits together, observed once per limit of each call.",
			Buckets:   c.buckets,
		}, []string{"limit"}),
		nearLimit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: c.namespace,
			Name:      "near_limit_total",
			Help:      "Admitted rate-limit decisions that left at most a fifth of the limit's capacity.",
		}, nearLabels),
		inUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: c.namespace,
			Name:      "permits_in_use",
			Help:      "Permits of concurrency limits that this instance's calls hold.",
		}, nearLabels),
	}
}

// Observe implements runtime.Observer: it counts ev in
// ratelimit_decisions_total, and in ratelimit_near_limit_total when
// ev.NearLimit(), and observes ev.Latency in
// ratelimit_decision_duration_seconds. It never looks at ctx.
func (o *Observer) Observe(_ context.Context, ev runtime.Event) {
	k := seriesKey{limit: ev.Limit.Name, result: ev.Result, source: ev.Source}
	if o.labelled {
		k.label = ev.Label
	}
	if ev.Result == runtime.ResultError || ev.Result == runtime.ResultUnsettled {
		k.source = 0
	}
	s := o.lookup(k)
	if s == nil {
		s = o.newSeries(k, ev.Limit.Algorithm == runtime.Concurrency)
	}
	s.decision.Inc()
	if ev.Result != runtime.ResultUnsettled && ev.Result != runtime.ResultReleased {
		// A failed settlement or a release is no decision: it took no
		// decision's time.
		s.duration.Observe(ev.Latency.Seconds())
	}
	if s.inUse != nil && ev.Source != runtime.SourceFailOpen {
		// A call admitted without a decision holds no permit.
		switch ev.Result {
		case runtime.ResultAllowed, runtime.ResultShadowLimited:
			s.inUse.Inc()
		case runtime.ResultReleased:
			s.inUse.Dec()
		}
	}
	if ev.NearLimit() {
		s.nearLimit.Inc()
	}
}

// lookup returns the series of k, or nil if k has not been seen.
func (o *Observer) lookup(k seriesKey) *series {
	if m := o.children.Load(); m != nil {
		return (*m)[k]
	}
	return nil
}

// newSeries resolves the children of k, a concurrency limit's if inFlight,
// and stores them for lookup.
func (o *Observer) newSeries(k seriesKey, inFlight bool) *series {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s := o.lookup(k); s != nil {
		return s // stored by another goroutine since our lookup
	}
	source := k.source.String()
	if k.result == runtime.ResultError || k.result == runtime.ResultUnsettled {
		source = SourceNone
	}
	counterValues := []string{k.limit, k.result.String(), source}
	nearValues := []string{k.limit}
	if o.labelled {
		counterValues = append(counterValues, k.label)
		nearValues = append(nearValues, k.label)
	}
	s := &series{
		decision:  o.decisions.WithLabelValues(counterValues...),
		duration:  o.durations.WithLabelValues(k.limit),
		nearLimit: o.nearLimit.WithLabelValues(nearValues...),
	}
	if inFlight {
		s.inUse = o.inUse.WithLabelValues(nearValues...)
	}
	var m map[seriesKey]*series
	if old := o.children.Load(); old != nil {
		m = make(map[seriesKey]*series, len(*old)+1)
		maps.Copy(m, *old)
	} else {
		m = make(map[seriesKey]*series, 1)
	}
	m[k] = s
	o.children.Store(&m)
	return s
}

// Describe implements prometheus.Collector: it sends the descriptors of the
// four metrics.
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	o.decisions.Describe(ch)
	o.durations.Describe(ch)
	o.nearLimit.Describe(ch)
	o.inUse.Describe(ch)
}

// Collect implements prometheus.Collector: it sends every series observed
// so far.
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	o.decisions.Collect(ch)
	o.durations.Collect(ch)
	o.nearLimit.Collect(ch)
	o.inUse.Collect(ch)
}
