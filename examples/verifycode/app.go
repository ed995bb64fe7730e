package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/examples/verifycode/notify"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// config is what the providers need from the command line and environment.
type config struct {
	// addr is the listen address; port 0 picks a free port.
	addr string
	// redisURL selects Redis (redis://host:port/db) instead of the
	// in-memory limiter.
	redisURL string
	// keyPrefix starts every Redis key the limiter writes.
	keyPrefix string
	// serve keeps serving instead of running the demo.
	serve bool
	// mailLog receives the mails the outbox "sends"; nil discards them.
	mailLog io.Writer
	// errLog receives the server's error log.
	errLog io.Writer
}

// app is the wired program.
type app struct {
	handler http.Handler
	outbox  *outbox
}

// newApp wires the program by calling one provider per component, in
// dependency order, as a DI container would. Each provider takes its
// dependencies as parameters and returns one component, so the same
// functions plug into google/wire:
//
//	//go:build wireinject
//
//	func initApp(cfg config) (*app, func(), error) {
//		wire.Build(
//			newLimiter,
//			newOutbox,
//			wire.Bind(new(notify.Mailer), new(*outbox)),
//			notify.NewService,
//			newCodeService,
//			newLogger,
//			newHandler,
//			wire.Struct(new(app), "*"),
//		)
//		return nil, nil, nil
//	}
//
// and into uber/fx: fx.Provide(newLimiter, newOutbox, ...), with
// fx.Annotate(newOutbox, fx.As(new(notify.Mailer))) for the interface and
// an fx.Lifecycle OnStop hook instead of the cleanup func.
//
// Whatever assembles the program, the rule is the same: the only provider
// of notify.CodeService returns the rate-limited wrapper.
func newApp(cfg config) (*app, func(), error) {
	limiter, cleanup, err := newLimiter(cfg)
	if err != nil {
		return nil, nil, err
	}
	box := newOutbox(cfg)
	codes := newCodeService(notify.NewService(box), limiter)
	return &app{handler: newHandler(codes, newLogger(cfg)), outbox: box}, cleanup, nil
}

// newCodeService is the provider of notify.CodeService: the plain service
// wrapped in its generated rate limits. The wrapper returns only an error,
// so its limiter records each decision in the request's context, where
// ratelimithttp.QuotaHeaders (see newHandler) finds it to put the RateLimit
// fields on successful responses too.
func newCodeService(svc *notify.Service, limiter runtime.Limiter) notify.CodeService {
	return notify.NewRateLimitedCodeService(svc, ratelimithttp.RecordDecisions(limiter))
}

// newLimiter returns the limiter that every rate-limited method shares: in
// memory by default, which needs nothing installed and suits a single
// instance, or Redis when cfg.redisURL is set, so that all instances of
// the service share one count per address. The returned func closes what
// the limiter holds open.
func newLimiter(cfg config) (runtime.Limiter, func(), error) {
	if cfg.redisURL == "" {
		return runtime.NewMemoryLimiter(), func() {}, nil
	}
	// The URL may hold a password, so errors never repeat it.
	opts, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL is not a Redis URL such as redis://127.0.0.1:6379/0: %w", err)
	}
	client := redis.NewClient(opts)
	// Check the address once at start-up, so that a typo fails loudly here
	// instead of every decision quietly falling back to the in-memory
	// limiter (the default failure policy, FailLocal, which keeps limits
	// enforced per instance during a later Redis outage).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("REDIS_URL: cannot reach Redis at %s: %w", opts.Addr, err)
	}
	limiter := redislimit.New(client, redislimit.WithPrefix(cfg.keyPrefix))
	return limiter, func() { _ = client.Close() }, nil
}

// newLogger returns the server's error log.
func newLogger(cfg config) *slog.Logger {
	w := cfg.errLog
	if w == nil {
		w = io.Discard
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// The generated wrapper must satisfy the interface it wraps; this line
// turns a stale ratelimit_gen.go into a compile error here.
var _ notify.CodeService = (*notify.RateLimitedCodeService)(nil)
