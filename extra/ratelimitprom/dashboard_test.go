package ratelimitprom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	grafanaprom "github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// strictDashboard decodes js strictly into the Grafana Foundation SDK's
// dashboard types, with the panel and data query plugins registered so that
// panel options and Prometheus queries are decoded strictly too: a field
// that is missing, mistyped or unknown to the schema fails the decoding.
func strictDashboard(js []byte) error {
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := sdkError(d.UnmarshalJSONStrict(js)); err != nil {
		return fmt.Errorf("dashboard does not decode strictly:\n%w", err)
	}
	if err := sdkError(d.Validate()); err != nil {
		return fmt.Errorf("dashboard does not validate:\n%w", err)
	}
	return nil
}

// loadDashboard checks js with strictDashboard and returns it decoded.
//
// The strict decoding of v0.0.22 reports errors but drops what it decoded
// without error: a nested UnmarshalJSONStrict returns its empty list of
// errors as a non-nil error, so that PanelOrRowPanel leaves its Panel nil,
// and Panel its Targets and Options empty. The dashboard is therefore
// read with the SDK's lenient decoding, after the strict one passed.
func loadDashboard(t *testing.T, js []byte) *dashboard.Dashboard {
	t.Helper()
	if err := strictDashboard(js); err != nil {
		t.Fatal(err)
	}
	var d dashboard.Dashboard
	if err := json.Unmarshal(js, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestDashboardStrictRejects checks that strictDashboard fails on a field
// the schema does not know at each level that the dashboard test relies on:
// without that, its passing would prove nothing.
func TestDashboardStrictRejects(t *testing.T) {
	var good map[string]any
	if err := json.Unmarshal(ratelimitprom.GrafanaDashboard(ratelimitprom.DefaultNamespace), &good); err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(d map[string]any){
		"dashboard": func(d map[string]any) { d["bogus"] = 1 },
		"panel":     func(d map[string]any) { panelOf(d, 4)["bogus"] = 1 },
		"stat panel options": func(d map[string]any) {
			panelOf(d, 0)["options"].(map[string]any)["bogus"] = 1
		},
		"timeseries panel options": func(d map[string]any) {
			panelOf(d, 4)["options"].(map[string]any)["legend"].(map[string]any)["bogus"] = 1
		},
		"prometheus query": func(d map[string]any) {
			panelOf(d, 4)["targets"].([]any)[0].(map[string]any)["bogus"] = 1
		},
		"variable": func(d map[string]any) {
			d["templating"].(map[string]any)["list"].([]any)[1].(map[string]any)["bogus"] = 1
		},
		"variable without name": func(d map[string]any) {
			delete(d["templating"].(map[string]any)["list"].([]any)[1].(map[string]any), "name")
		},
	} {
		var d map[string]any
		js, _ := json.Marshal(good)
		_ = json.Unmarshal(js, &d) // a deep copy
		spoil(d)
		js, _ = json.Marshal(d)
		if err := strictDashboard(js); err == nil {
			t.Errorf("a bogus %s passed the strict decoding", name)
		}
	}
	js, _ := json.Marshal(good)
	if err := strictDashboard(js); err != nil {
		t.Errorf("the dashboard itself, re-encoded: %v", err)
	}
}

func panelOf(d map[string]any, i int) map[string]any {
	return d["panels"].([]any)[i].(map[string]any)
}

// sdkError returns err, or nil if it is an empty cog.BuildErrors: the
// SDK's strict decoding returns its list of errors as an error even when
// the list is empty.
func sdkError(err error) error {
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}

// query is one PromQL expression of the dashboard, with where it is.
type query struct {
	where  string
	expr   string
	legend string
}

// dashboardQueries returns the PromQL of every panel's targets and of the
// query variables, failing if a panel is not a Prometheus panel of the
// datasource variable.
func dashboardQueries(t *testing.T, d *dashboard.Dashboard) []query {
	t.Helper()
	var qs []query
	for _, v := range d.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		if v.Query == nil || v.Query.String == nil {
			t.Fatalf("variable %s has no query string", v.Name)
		}
		// Grafana's label_values(metric, label) lists the values of label
		// among the series of metric: check its metric as a selector.
		m := regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`).FindStringSubmatch(*v.Query.String)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(metric, label)", v.Name, *v.Query.String)
		}
		qs = append(qs, query{where: "variable " + v.Name, expr: m[1], legend: "{{" + m[2] + "}}"})
	}
	for _, p := range d.Panels {
		if p.RowPanel != nil {
			continue
		}
		panel := p.Panel
		title := *panel.Title
		if panel.Datasource == nil || panel.Datasource.Type == nil || *panel.Datasource.Type != "prometheus" ||
			panel.Datasource.Uid == nil || *panel.Datasource.Uid != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable", title)
		}
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", title)
		}
		for _, target := range panel.Targets {
			pq, ok := target.(*grafanaprom.Dataquery)
			if !ok {
				t.Fatalf("panel %q: target decoded as %T, not a Prometheus query", title, target)
			}
			legend := ""
			if pq.LegendFormat != nil {
				legend = *pq.LegendFormat
			}
			qs = append(qs, query{where: fmt.Sprintf("panel %q, query %s", title, deref(pq.RefId)), expr: pq.Expr, legend: legend})
		}
	}
	return qs
}

// TestDashboardSchema decodes dashboard.json with the Grafana Foundation
// SDK and checks its variables and panels.
func TestDashboardSchema(t *testing.T) {
	file, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != string(ratelimitprom.GrafanaDashboard(ratelimitprom.DefaultNamespace)) {
		t.Fatal("GrafanaDashboard(DefaultNamespace) is not dashboard.json")
	}
	d := loadDashboard(t, file)

	vars := map[string]dashboard.VariableModel{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != dashboard.VariableTypeDatasource || v.Query == nil || v.Query.String == nil || *v.Query.String != "prometheus" {
		t.Errorf("no datasource variable of Prometheus data sources: %+v", v)
	}
	if v, ok := vars["limit"]; !ok || v.Type != dashboard.VariableTypeQuery || v.Multi == nil || !*v.Multi || v.IncludeAll == nil || !*v.IncludeAll {
		t.Errorf("no multi-value limit variable including All: %+v", v)
	}

	var titles []string
	ids := map[uint32]bool{}
	for _, p := range d.Panels {
		if p.Panel == nil {
			continue
		}
		titles = append(titles, *p.Panel.Title)
		if p.Panel.Id == nil || ids[*p.Panel.Id] {
			t.Errorf("panel %q has no id or a duplicate one", *p.Panel.Title)
		} else {
			ids[*p.Panel.Id] = true
		}
	}
	for _, want := range []string{
		"Decisions/s by result",
		"Denial ratio per limit",
		"Shadow-limited/s per limit",
		"Near-limit/s per limit",
		"Decision latency p50 / p99",
		"Decisions/s by source",
	} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q among %q", want, titles)
		}
	}
	for _, q := range dashboardQueries(t, d) {
		if strings.HasPrefix(q.where, "panel") && !strings.Contains(q.expr, `limit=~"$limit"`) {
			t.Errorf("%s: %s does not filter by the limit variable", q.where, q.expr)
		}
	}
}

// exported gathers the metric families of an Observer of namespace after
// events of every result and source, from a real registry, and returns
// the label names of each series name a query can select: a histogram's
// _bucket (with le), _sum and _count, a counter's own name.
func exported(t *testing.T, opts ...ratelimitprom.Option) map[string][]string {
	t.Helper()
	obs := ratelimitprom.NewObserver(opts...)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(obs)
	l := runtime.Limit{Name: "L", Window: 1, Max: 1}
	for _, r := range []runtime.Result{runtime.ResultAllowed, runtime.ResultLimited, runtime.ResultShadowLimited, runtime.ResultError} {
		obs.Observe(context.Background(), runtime.Event{Limit: l, Result: r})
	}
	obs.Observe(context.Background(), runtime.Event{Limit: runtime.Limit{Name: "C", Window: 1, Max: 1, Algorithm: runtime.Concurrency}, Result: runtime.ResultReleased})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{}
	for _, mf := range mfs {
		var labels []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, lp.GetName())
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			names[mf.GetName()+"_bucket"] = append(slices.Clone(labels), "le")
			names[mf.GetName()+"_sum"] = labels
			names[mf.GetName()+"_count"] = labels
		default:
			names[mf.GetName()] = labels
		}
	}
	return names
}

// labelValues are the values that the Observer gives its labels with
// fixed vocabularies: a query matching others matches nothing.
var labelValues = map[string][]string{
	"result": {"allowed", "limited", "shadow-limited", "error", "unsettled", "released"},
	"source": {"store", "deny-cache", "fallback", "fail-open", "lease", ratelimitprom.SourceNone},
}

// TestDashboardQueries checks that every PromQL expression of the
// dashboard, for the default namespace and another, selects only metrics
// that an Observer of that namespace exports, with label names they have,
// values of result and source that the Observer gives, and groups and
// names legends only by labels of the metrics selected.
func TestDashboardQueries(t *testing.T) {
	for _, ns := range []string{ratelimitprom.DefaultNamespace, "myapp", ""} {
		t.Run("namespace="+ns, func(t *testing.T) {
			names := exported(t, ratelimitprom.WithNamespace(ns))
			d := loadDashboard(t, ratelimitprom.GrafanaDashboard(ns))
			qs := dashboardQueries(t, d)
			if len(qs) < 10 {
				t.Fatalf("found %d queries, want at least 10", len(qs))
			}
			used := map[string]bool{}
			for _, q := range qs {
				p, err := scanPromQL(q.expr)
				if err != nil {
					t.Errorf("%s: %v", q.where, err)
					continue
				}
				if len(p.selectors) == 0 {
					t.Errorf("%s: %s selects no metric", q.where, q.expr)
				}
				available := map[string]bool{}
				for _, s := range p.selectors {
					labels, ok := names[s.metric]
					if !ok {
						t.Errorf("%s: metric %s is not exported (exported: %v)", q.where, s.metric, keys(names))
						continue
					}
					used[s.metric] = true
					for _, l := range labels {
						available[l] = true
					}
					for _, m := range s.matchers {
						if !slices.Contains(labels, m.label) {
							t.Errorf("%s: %s has no label %s (it has %v)", q.where, s.metric, m.label, labels)
						}
						if vocab, ok := labelValues[m.label]; ok {
							for _, v := range m.values() {
								if !slices.Contains(vocab, v) {
									t.Errorf("%s: %s=%q: %s is never %q (it is one of %q)", q.where, m.label, m.value, m.label, v, vocab)
								}
							}
						}
					}
				}
				for _, l := range p.grouping {
					if !available[l] {
						t.Errorf("%s: groups by %s, a label of none of its metrics", q.where, l)
					}
				}
				for _, m := range regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`).FindAllStringSubmatch(q.legend, -1) {
					if !available[m[1]] {
						t.Errorf("%s: legend %q names %s, a label of none of its metrics", q.where, q.legend, m[1])
					}
				}
			}
			for name := range names {
				if !used[name] && !strings.HasSuffix(name, "_sum") && !strings.HasSuffix(name, "_count") {
					t.Errorf("the dashboard shows nothing of %s", name)
				}
			}
		})
	}
}

func keys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestScanPromQL checks the scanner the dashboard test relies on.
func TestScanPromQL(t *testing.T) {
	p, err := scanPromQL(`histogram_quantile(0.99, sum by (limit, le) (rate(a_bucket{limit=~"$limit", result!="x|y"}[$__rate_interval]))) / on(limit) group_left sum without (source) (b) > bool 0.5 or c offset 5m`)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(p.selectors, p.grouping)
	want := `[{a_bucket [{limit =~ $limit} {result != x|y}]} {b []} {c []}] [limit le limit source]`
	if got != want {
		t.Errorf("scanned\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{`a{b="c"`, `rate(a[5m]`, `a{b~"c"}`} {
		if _, err := scanPromQL(bad); err == nil {
			t.Errorf("scanPromQL(%q) succeeded, want an error", bad)
		}
	}
}

// promql is what scanPromQL finds in an expression.
type promql struct {
	selectors []selector
	grouping  []string // label names of by, without, on, ignoring and group_left/right
}

type selector struct {
	metric   string
	matchers []matcher
}

type matcher struct {
	label, op, value string
}

func (m matcher) String() string { return m.label + m.op + m.value }

// values returns the values m can match: its value, or the alternatives of
// a regular expression made of literal alternatives only. A regular
// expression with other syntax, or a Grafana variable, yields nothing.
func (m matcher) values() []string {
	if strings.Contains(m.value, "$") {
		return nil
	}
	if m.op == "=~" || m.op == "!~" {
		if regexp.QuoteMeta(strings.ReplaceAll(m.value, "|", "")) != strings.ReplaceAll(m.value, "|", "") {
			return nil
		}
		return strings.Split(m.value, "|")
	}
	return []string{m.value}
}

// promqlKeywords are the identifiers that are neither metric names nor
// functions; those marked true are followed by a parenthesised list of
// label names when a parenthesis follows them.
var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": false, "offset": false, "and": false, "or": false, "unless": false, "atan2": false,
}

// promqlAggregations are the aggregation operators, which a grouping
// clause may separate from their parenthesis: sum by (le) (...).
var promqlAggregations = []string{
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio",
}

// scanPromQL finds the metric selectors of a PromQL expression and the
// label names it groups or matches by. It is a scanner, not a parser: it
// knows identifiers, label matchers, ranges, strings and numbers, and that
// an identifier followed by a parenthesis is a function or aggregation.
// That is all the dashboard's queries use.
func scanPromQL(expr string) (promql, error) {
	var p promql
	s := expr
	depth := 0 // of parentheses
	skipSpace := func() { s = strings.TrimLeft(s, " \t\n") }
	ident := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	labelName := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*`)
	str := regexp.MustCompile(`^"(?:[^"\\]|\\.)*"`)
	number := regexp.MustCompile(`^[0-9][0-9.eE+-]*[a-z]*`)
	for {
		skipSpace()
		if s == "" {
			if depth != 0 {
				return p, fmt.Errorf("unbalanced parentheses in %q", expr)
			}
			return p, nil
		}
		switch {
		case s[0] == '"':
			lit := str.FindString(s)
			if lit == "" {
				return p, fmt.Errorf("unterminated string in %q", expr)
			}
			s = s[len(lit):]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return p, fmt.Errorf("unterminated range in %q", expr)
			}
			s = s[end+1:]
		case s[0] == '{':
			return p, fmt.Errorf("selector without a metric name in %q", expr)
		case number.MatchString(s):
			s = s[len(number.FindString(s)):]
		case ident.MatchString(s):
			name := ident.FindString(s)
			s = s[len(name):]
			skipSpace()
			if takesLabels, ok := promqlKeywords[name]; ok {
				if takesLabels && strings.HasPrefix(s, "(") {
					end := strings.IndexByte(s, ')')
					if end < 0 {
						return p, fmt.Errorf("unterminated label list in %q", expr)
					}
					for l := range strings.SplitSeq(s[1:end], ",") {
						if l = strings.TrimSpace(l); l != "" {
							p.grouping = append(p.grouping, l)
						}
					}
					s = s[end+1:]
				}
				continue
			}
			if strings.HasPrefix(s, "(") || slices.Contains(promqlAggregations, name) {
				continue // a function or aggregation
			}
			sel := selector{metric: name}
			if strings.HasPrefix(s, "{") {
				s = s[1:]
				for {
					skipSpace()
					if strings.HasPrefix(s, "}") {
						s = s[1:]
						break
					}
					l := labelName.FindString(s)
					if l == "" {
						return p, fmt.Errorf("bad label matcher at %q in %q", s, expr)
					}
					s = strings.TrimLeft(s[len(l):], " ")
					var op string
					for _, o := range []string{"=~", "!~", "!=", "="} {
						if strings.HasPrefix(s, o) {
							op = o
							break
						}
					}
					if op == "" {
						return p, fmt.Errorf("bad matcher operator at %q in %q", s, expr)
					}
					s = strings.TrimLeft(s[len(op):], " ")
					lit := str.FindString(s)
					if lit == "" {
						return p, fmt.Errorf("bad matcher value at %q in %q", s, expr)
					}
					s = strings.TrimLeft(s[len(lit):], " ")
					sel.matchers = append(sel.matchers, matcher{label: l, op: op, value: lit[1 : len(lit)-1]})
					if strings.HasPrefix(s, ",") {
						s = s[1:]
					} else if !strings.HasPrefix(s, "}") {
						return p, fmt.Errorf("unterminated selector in %q", expr)
					}
				}
			}
			p.selectors = append(p.selectors, sel)
		case s[0] == '(' || s[0] == ')':
			if s[0] == '(' {
				depth++
			} else if depth--; depth < 0 {
				return p, fmt.Errorf("unbalanced parentheses in %q", expr)
			}
			s = s[1:]
		case strings.ContainsRune("+-*/%^=!<>,", rune(s[0])):
			s = s[1:]
		default:
			return p, fmt.Errorf("unexpected %q in %q", s, expr)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
