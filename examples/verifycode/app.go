package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/examples/verifycode/notify"
	"github.com/ratelimitgen/ratelimitgen/extra/ratelimitprom"
	"github.com/ratelimitgen/ratelimitgen/ratelimithttp"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
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
	// overridesFile, when set, is a JSON file of limit overrides that the
	// program watches and applies while it runs.
	overridesFile string
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

// initApp wires the program by calling one provider per component, in
// dependency order, as a DI container would. Each provider takes its
// dependencies as parameters and returns one component, so the same
// functions plug into google/wire:
//
//	//go:build wireinject
//
//	func initApp(ctx context.Context, cfg config) (*app, func(), error) {
//		wire.Build(
//			newMetrics,
//			newOverrides,
//			newLimiter,
//			newOutbox,
//			wire.Bind(new(notify.Mailer), new(*outbox)),
//			notify.NewService,
//			newCodeService,
//			newLogger,
//			newHandler,
//			newApp,
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
func initApp(ctx context.Context, cfg config) (*app, func(), error) {
	metrics := newMetrics()
	overrides, err := newOverrides(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	limiter, cleanup, err := newLimiter(cfg, metrics, overrides)
	if err != nil {
		return nil, nil, err
	}
	box := newOutbox(cfg)
	codes := newCodeService(notify.NewService(box), limiter)
	return newApp(newHandler(codes, newLogger(cfg)), metrics, box), cleanup, nil
}

// newApp serves the API and, on GET /metrics, the limits' metrics.
func newApp(api http.Handler, metrics *ratelimitprom.Observer, box *outbox) *app {
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", api)
	return &app{handler: mux, outbox: box}
}

// newCodeService is the provider of notify.CodeService: the plain service
// wrapped in its generated rate limits.
func newCodeService(svc *notify.Service, limiter runtime.Limiter) notify.CodeService {
	return notify.NewRateLimitedCodeService(svc, limiter)
}

// newMetrics returns the observer that counts decisions for Prometheus.
func newMetrics() *ratelimitprom.Observer {
	return ratelimitprom.NewObserver()
}

// newOverrides returns the overrides of limits in force: none, or those of
// cfg.overridesFile, which is read again within a second of every change
// until ctx ends. They are checked against the limits of notify, so a file
// that would make a limit fail its calls is refused; one refused at
// start-up stops the program, one refused later is logged, and the last
// good one stays in force. An override whose name matches no limit of
// notify changes nothing and is logged as a warning.
func newOverrides(ctx context.Context, cfg config) (*runtime.Overrides, error) {
	o := new(runtime.Overrides)
	if err := o.AddLimits(notify.RateLimits()...); err != nil {
		return nil, err
	}
	if cfg.overridesFile == "" {
		return o, nil
	}
	log := newLogger(cfg)
	warnUnmatched := func() {
		if names := o.Unmatched(); len(names) > 0 {
			log.Warn("rate-limit overrides name no limit of this program, so they change nothing", "file", cfg.overridesFile, "names", names)
		}
	}
	err := o.WatchFile(ctx, cfg.overridesFile, time.Second, func(err error) {
		if err != nil {
			log.Error("rate-limit overrides refused; the last good ones stay in force", "err", err)
			return
		}
		log.Info("rate-limit overrides reloaded", "file", cfg.overridesFile)
		warnUnmatched()
	})
	if err != nil {
		return nil, err
	}
	warnUnmatched()
	return o, nil
}

// newLimiter returns the limiter that every rate-limited method shares.
// It decides in memory by default, which needs nothing installed and suits
// a single instance, or in Redis when cfg.redisURL is set, so that all
// instances of the service share one count per address. Around that
// store, innermost first: ratelimithttp.RecordDecisions records each
// decision in the request's context, where ratelimithttp.QuotaHeaders (see
// newHandler) finds it to put the RateLimit fields on successful responses
// too; runtime.Operate, outermost so that what is recorded and every error
// name the limits in force, applies overrides and counts each decision in
// metrics. The returned func closes what the limiter holds open.
func newLimiter(cfg config, metrics *ratelimitprom.Observer, overrides *runtime.Overrides) (runtime.Limiter, func(), error) {
	store, cleanup, err := newStore(cfg)
	if err != nil {
		return nil, nil, err
	}
	return runtime.Operate(ratelimithttp.RecordDecisions(store),
		runtime.WithOverrides(overrides),
		runtime.WithObserver(metrics),
	), cleanup, nil
}

// newStore returns the limiter that keeps the counts.
func newStore(cfg config) (runtime.Limiter, func(), error) {
	if cfg.redisURL == "" {
		return memlimit.New(), func() {}, nil
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
