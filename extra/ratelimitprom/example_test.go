package ratelimitprom_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// Register the Observer with a registry, give it to runtime.Operate, and
// serve the registry on /metrics. Three calls against a limit of two per
// minute: two admitted, one denied; the second left no room, so it counts
// as near the limit, while the denied third is over it.
func Example() {
	obs := ratelimitprom.NewObserver()
	reg := prometheus.NewRegistry()
	reg.MustRegister(obs)
	lim := runtime.Operate(memlimit.New(), runtime.WithObserver(obs))

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	login := runtime.Limit{Name: "Login.PerUser", Window: time.Minute, Max: 2}
	for range 3 {
		err := runtime.Enforce(ctx, lim, runtime.Request{Limit: login, Key: "alice"})
		fmt.Println("limited:", errors.Is(err, runtime.ErrLimited))
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		// The latencies vary from run to run; their count does not.
		if strings.HasPrefix(line, "ratelimit_") && !strings.Contains(line, "_bucket") && !strings.Contains(line, "_sum") {
			fmt.Println(line)
		}
	}
	// Output:
	// limited: false
	// limited: false
	// limited: true
	// ratelimit_decision_duration_seconds_count{limit="Login.PerUser"} 3
	// ratelimit_decisions_total{limit="Login.PerUser",result="allowed",source="store"} 2
	// ratelimit_decisions_total{limit="Login.PerUser",result="limited",source="store"} 1
	// ratelimit_near_limit_total{limit="Login.PerUser"} 1
}
