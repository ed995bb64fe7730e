// Command verifycode is a small HTTP service that e-mails verification
// codes, rate limited with ratelimitgen: at most 3 codes per minute and 5
// verification attempts per 10 minutes for each address. The limits are
// directives on the notify.CodeService interface; the wrapper that enforces
// them is generated (notify/ratelimit_gen.go).
//
//	go -C examples run ./verifycode          # demo: serve, call itself, print, exit
//	go -C examples run ./verifycode -serve   # keep serving for curl
//
// GET /metrics serves each limit's decisions in the Prometheus text format.
// With -overrides file.json the limits follow that file, reread within a
// second of each change (see runtime.Overrides.LoadFile for its format):
//
//	{"limits": {"CodeService.SendCode": {"max": 10}}}
//
// It uses an in-memory limiter unless REDIS_URL is set, for example
// REDIS_URL=redis://127.0.0.1:6379/0.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	serve := flag.Bool("serve", false, "keep serving until interrupted instead of running the demo")
	addr := flag.String("addr", "127.0.0.1:0", "listen address; port 0 picks a free port")
	overrides := flag.String("overrides", "", "JSON file of limit overrides to apply and watch, such as {\"limits\": {\"CodeService.SendCode\": {\"max\": 10}}}")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{
		addr:          *addr,
		redisURL:      os.Getenv("REDIS_URL"),
		keyPrefix:     "verifycode:",
		serve:         *serve,
		overridesFile: *overrides,
		errLog:        os.Stderr,
	}
	if err := run(ctx, os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "verifycode:", err)
		os.Exit(1)
	}
}

// run serves the API on cfg.addr and, unless cfg.serve is set, runs the
// demo against it and returns; with cfg.serve it serves until ctx ends.
// It writes what a person should read to out.
func run(ctx context.Context, out io.Writer, cfg config) error {
	if cfg.serve {
		cfg.mailLog = out
	} else if cfg.redisURL != "" {
		// Counts in Redis outlive the process: a fresh prefix per demo run
		// keeps a second run within 10 minutes from starting at 429.
		cfg.keyPrefix += "demo:" + rand.Text()[:8] + ":"
	}
	a, cleanup, err := initApp(ctx, cfg)
	if err != nil {
		return err
	}
	defer cleanup()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.handler, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()

	base := "http://" + ln.Addr().String()
	if cfg.redisURL != "" {
		fmt.Fprintln(out, "limiter: Redis (REDIS_URL)")
	} else {
		fmt.Fprintln(out, "limiter: in memory (set REDIS_URL=redis://127.0.0.1:6379/0 to share counts through Redis)")
	}
	if !cfg.serve {
		return demo(ctx, out, base, a.outbox)
	}

	fmt.Fprintf(out, "serving on %s; try:\n", base)
	fmt.Fprintf(out, "  curl -i -X POST %s/codes -d '{\"email\":\"alice@example.com\"}'\n", base)
	fmt.Fprintf(out, "  curl -i -X POST %s/codes/verify -d '{\"email\":\"alice@example.com\",\"code\":\"CODE\"}'\n", base)
	fmt.Fprintf(out, "  curl -s %s/metrics | grep ^ratelimit_\n", base)
	fmt.Fprintln(out, "codes are printed here instead of mailed; Ctrl-C stops")
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
