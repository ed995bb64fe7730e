package ratelimitprom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// TestDashboardInPrometheus scrapes a service's observer with a real
// Prometheus server and evaluates every query of the dashboard in it,
// twice. First the service only admits and denies: every panel must show
// a number, and the shadow-limited and degraded panels 0, not "no data"
// (an operator cannot tell an empty panel from a broken one). Then it also
// decides shadow-limited calls and, through a Redis limiter whose Redis is
// unreachable, fallback ones: those panels must show them.
func TestDashboardInPrometheus(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found: this test runs a real Prometheus server. Install it with\n" +
			"    sudo apt-get install -y prometheus     # Debian/Ubuntu (make test does it as root)\n" +
			"    brew install prometheus                # macOS")
	}
	ctx := context.Background()
	obs := ratelimitprom.NewObserver()
	reg := prometheus.NewRegistry()
	reg.MustRegister(obs)
	mem := runtime.Operate(memlimit.New(), runtime.WithObserver(obs))
	send := runtime.Limit{Name: "Notifier.SendCode", Window: time.Hour, Max: 3}
	query := runtime.Limit{Name: "Orders.Query", Window: time.Hour, Max: 1000}
	shadow := runtime.Limit{Name: "Orders.Export", Window: time.Hour, Max: 1, Mode: runtime.ModeShadow}
	inFlight := runtime.Limit{Name: "Orders.Render", Window: time.Hour, Max: 2, Algorithm: runtime.Concurrency}
	// Port 1 on loopback refuses connections: every decision is the
	// fallback's.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	outage := runtime.Operate(redislimit.New(down, redislimit.WithInstances(1)), runtime.WithObserver(obs))

	// Calls go on while Prometheus scrapes, so that every rate has a
	// denominator: a ratio of no traffic is NaN, which is not the point.
	var troubled atomic.Bool
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held []runtime.Hold
		for i := 0; ; i++ {
			_ = runtime.Enforce(ctx, mem, runtime.Request{Limit: send, Key: "a@example.com"})
			_ = runtime.Enforce(ctx, mem, runtime.Request{Limit: query, Key: fmt.Sprint("user", i%3)})
			if h, err := runtime.Admit(ctx, mem, runtime.Request{Limit: inFlight, Key: "tenant"}); err == nil && i%2 == 0 {
				// Every other call stays in flight until the next.
				held = append(held, h)
			} else if err == nil {
				_ = h.Settle(ctx, 1)
			}
			if len(held) > 1 {
				_ = held[0].Settle(ctx, 1)
				held = held[1:]
			}
			if troubled.Load() {
				_ = runtime.Enforce(ctx, mem, runtime.Request{Limit: shadow, Key: "a@example.com"})
				_ = runtime.Enforce(ctx, outage, runtime.Request{Limit: query, Key: fmt.Sprint("user", i%3)})
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)

	api := startPrometheus(t, bin, strings.TrimPrefix(srv.URL, "http://"))
	d := loadDashboard(t, ratelimitprom.GrafanaDashboard(ratelimitprom.DefaultNamespace))
	quiet := func(where string) bool {
		return strings.Contains(where, `"Shadow-limited`) || strings.Contains(where, `"Degraded"`)
	}

	// rate() needs two samples in its range.
	waitFor(t, api, "count_over_time(ratelimit_decisions_total[1m]) >= 3")
	for _, q := range evaluate(t, api, d) {
		for _, v := range q.values {
			if quiet(q.where) && v != "0" {
				t.Errorf("%s: %s = %s with nothing shadow-limited or degraded, want 0", q.where, q.expr, v)
			}
		}
	}

	troubled.Store(true)
	waitFor(t, api, `sum(rate(ratelimit_decisions_total{source="fallback"}[1m])) > 0 and sum(rate(ratelimit_decisions_total{result="shadow-limited"}[1m])) > 0`)
	for _, q := range evaluate(t, api, d) {
		shows := false
		for _, v := range q.values {
			shows = shows || (v != "0" && !strings.HasPrefix(v, "-"))
		}
		if quiet(q.where) && !shows {
			t.Errorf("%s: %s = %v while calls are shadow-limited and degraded", q.where, q.expr, q.values)
		}
		t.Logf("%s: %s = %v", q.where, q.expr, q.values)
	}
}

// evaluated is a dashboard query as Prometheus ran it, with the value of
// each series it returned.
type evaluated struct {
	query
	values []string
}

// evaluate runs every query of d in Prometheus now, with every limit
// selected, and fails the test for a query that errs, returns no data or
// returns a value that is not a finite number.
func evaluate(t *testing.T, api string, d *dashboard.Dashboard) []evaluated {
	t.Helper()
	var out []evaluated
	for _, q := range dashboardQueries(t, d) {
		q.expr = strings.NewReplacer(`$limit`, `.+`, `$__rate_interval`, `1m`).Replace(q.expr)
		res, err := promQuery(api, q.expr)
		if err != nil {
			t.Errorf("%s: %s: %v", q.where, q.expr, err)
			continue
		}
		if len(res) == 0 {
			t.Errorf("%s: %s returns no data while the service decides", q.where, q.expr)
		}
		e := evaluated{query: q}
		for _, r := range res {
			var sample struct {
				Value [2]any `json:"value"`
			}
			if err := json.Unmarshal(r, &sample); err != nil {
				t.Fatal(err)
			}
			v, _ := sample.Value[1].(string)
			if v == "NaN" || v == "+Inf" || v == "-Inf" {
				t.Errorf("%s: %s returns %s", q.where, q.expr, r)
			}
			e.values = append(e.values, v)
		}
		out = append(out, e)
	}
	return out
}

// startPrometheus runs bin scraping target every second, with its data in
// a temporary directory, and returns its HTTP API's base URL once ready.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", logs.String())
		}
	})
	api := "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(api + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return api
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after a minute: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor waits until expr returns a series, for at most two minutes.
func waitFor(t *testing.T, api, expr string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := promQuery(api, expr)
		if err == nil && len(res) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still empty after two minutes (last error: %v)", expr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// promQuery evaluates expr now through Prometheus's HTTP API and returns
// the series of its instant vector.
func promQuery(api, expr string) ([]json.RawMessage, error) {
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s", body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("result is a %s, not an instant vector", body.Data.ResultType)
	}
	return body.Data.Result, nil
}
