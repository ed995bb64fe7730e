package ratelimitprom

import (
	_ "embed"
	"strings"
)

//go:embed dashboard.json
var dashboard string

// GrafanaDashboard returns a Grafana dashboard, as JSON to import or
// provision, of the metrics of an Observer whose namespace is namespace:
// DefaultNamespace for one made without WithNamespace. It is the file
// dashboard.json of this module with the metric names rewritten for
// namespace.
//
// The dashboard has a "datasource" variable, to pick a Prometheus data
// source, and a "limit" variable (all limits by default); its panels show
// decisions per second by result, the denial ratio per limit, shadow
// denials per limit, near-limit decisions per limit, p50 and p99 decision
// latency per limit, decisions by source, where fallback, fail-open and
// none (errors) show a store in trouble, and the permits in use per
// concurrency limit. Each call returns a new slice. A
// program that never calls GrafanaDashboard does not link the dashboard.
func GrafanaDashboard(namespace string) []byte {
	if namespace == DefaultNamespace {
		return []byte(dashboard)
	}
	prefix := ""
	if namespace != "" {
		prefix = namespace + "_"
	}
	return []byte(strings.NewReplacer(
		DefaultNamespace+"_decisions_total", prefix+"decisions_total",
		DefaultNamespace+"_decision_duration_seconds", prefix+"decision_duration_seconds",
		DefaultNamespace+"_near_limit_total", prefix+"near_limit_total",
		DefaultNamespace+"_permits_in_use", prefix+"permits_in_use",
	).Replace(dashboard))
}
