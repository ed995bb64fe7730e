// Command tokenbudget serves completions from a model-like backend with a
// per-user budget of tokens per minute, counted from what each completion
// used (settle=), not from what it asked for:
//
//	go run ./tokenbudget -addr localhost:8080
//	curl -H 'X-User: ann' -d '{"prompt":"one two three","max_tokens":500}' localhost:8080/complete
//
// The limiter is in memory; a service with replicas gives the model a
// redislimit.Limiter instead (see examples/verifycode).
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/ratelimitgen/ratelimitgen/examples/tokenbudget/llm"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "address to serve on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, memlimit.New()); err != nil {
		log.Fatal(err)
	}
}

// newMux returns the service's routes, with the model rate-limited by lim.
func newMux(lim runtime.Limiter) *http.ServeMux {
	model := llm.NewRateLimitedModel(llm.Echo{}, lim)
	mux := http.NewServeMux()
	mux.Handle("POST /complete", completeHandler(model))
	return mux
}

// run serves on addr until ctx is done.
func run(ctx context.Context, addr string, lim runtime.Limiter) error {
	srv := &http.Server{
		Addr: addr,
		// RecordDecisions and QuotaHeaders put the RateLimit fields on
		// successful answers too, not only on 429s.
		Handler:           ratelimithttp.QuotaHeaders(newMux(ratelimithttp.RecordDecisions(lim))),
		ReadHeaderTimeout: 5 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("serving on http://%s/complete", addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
