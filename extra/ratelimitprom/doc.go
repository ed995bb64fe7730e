// Package ratelimitprom exports the decisions of a ratelimitgen Limiter as
// Prometheus metrics.
//
// An Observer is both a runtime.Observer, given to runtime.Operate with
// runtime.WithObserver, and a prometheus.Collector, registered with a
// prometheus.Registerer:
//
//	obs := ratelimitprom.NewObserver()
//	prometheus.MustRegister(obs)
//	lim := runtime.Operate(memlimit.New(), runtime.WithObserver(obs))
//
// With the default namespace it exports:
//
//	ratelimit_decisions_total{limit,result,source}      counter
//	ratelimit_decision_duration_seconds{limit}          histogram
//	ratelimit_near_limit_total{limit}                   counter
//
// See Observer for what each one counts. GrafanaDashboard returns a
// Grafana dashboard of them, the module's dashboard.json.
//
// This package is a module of its own, so that the ratelimitgen core does
// not depend on the Prometheus client.
package ratelimitprom
