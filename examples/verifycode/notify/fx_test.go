package notify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/ratelimitgen/ratelimitgen/examples/verifycode/notify"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// These tests follow docs/runtime.md#wiring with uber/fx: the wrapper
// provider there takes the service's interface and returns it, so fx
// wires it as a decorator, not as a second provider of the same type.

// newCodeService is docs/runtime.md's NewNotifier for this package.
func newCodeService(impl notify.CodeService, limiter runtime.Limiter) notify.CodeService {
	return notify.NewRateLimitedCodeService(impl, limiter)
}

func newLimiter() runtime.Limiter { return memlimit.New() }

// fxOptions provides what the service needs: a mailbox as the
// notify.Mailer (and as itself, so the test can count the mails) and the
// one limiter of the process.
func fxOptions(box *mailbox) fx.Option {
	return fx.Options(
		fx.NopLogger,
		fx.Supply(box),
		fx.Provide(
			func(b *mailbox) notify.Mailer { return b },
			newLimiter,
		),
	)
}

// requireLimited calls svc.SendCode for one address as often as its limit
// admits, then once more, and checks that only the last call is denied
// and that only the admitted ones reached the mailer.
func requireLimited(t *testing.T, svc notify.CodeService, box *mailbox) {
	t.Helper()
	require.IsType(t, (*notify.RateLimitedCodeService)(nil), svc, "fx injected the unlimited service")
	ctx := context.Background()
	req := notify.SendCodeRequest{Email: "alice@example.com"}
	const max = 3 // SendCode's max= in notify.go
	for i := range max {
		require.NoError(t, svc.SendCode(ctx, req), "call %d", i+1)
	}
	err := svc.SendCode(ctx, req)
	require.Error(t, err, "call %d", max+1)
	assert.True(t, errors.Is(err, runtime.ErrLimited), "call %d: %v", max+1, err)
	var le *runtime.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "CodeService.SendCode", le.Limit.Name)
	assert.Len(t, box.sent, max, "the denied call reached the mailer")
}

// TestFxDecorate is the form docs/runtime.md gives: the plain service
// provided as the interface (fx.Annotate with fx.As, so its concrete type
// is not in the graph), and the wrapper provider as fx.Decorate, so that
// every consumer of notify.CodeService gets the wrapper.
func TestFxDecorate(t *testing.T) {
	box := new(mailbox)
	var svc notify.CodeService
	app := fxtest.New(t,
		fxOptions(box),
		fx.Provide(fx.Annotate(notify.NewService, fx.As(new(notify.CodeService)))),
		fx.Decorate(newCodeService),
		fx.Invoke(func(s notify.CodeService) { svc = s }),
	)
	app.RequireStart()
	defer app.RequireStop()
	requireLimited(t, svc, box)
}

// TestFxProvideConcrete is the form of examples/verifycode's newCodeService:
// a provider that takes the concrete service, so fx.Provide alone works,
// at the price of *notify.Service, unlimited, being in the graph too.
func TestFxProvideConcrete(t *testing.T) {
	box := new(mailbox)
	var svc notify.CodeService
	app := fxtest.New(t,
		fxOptions(box),
		fx.Provide(
			notify.NewService,
			func(impl *notify.Service, limiter runtime.Limiter) notify.CodeService {
				return notify.NewRateLimitedCodeService(impl, limiter)
			},
		),
		fx.Invoke(func(s notify.CodeService) { svc = s }),
	)
	app.RequireStart()
	defer app.RequireStop()
	requireLimited(t, svc, box)
}

// TestFxProvideGenerated provides the generated constructor itself, with no
// function of one's own: it returns the concrete wrapper, so fx.As makes
// it the provider of the interface, and the plain service it wraps goes by
// a name so that the two providers of notify.CodeService do not clash.
func TestFxProvideGenerated(t *testing.T) {
	box := new(mailbox)
	var svc notify.CodeService
	app := fxtest.New(t,
		fxOptions(box),
		fx.Provide(
			fx.Annotate(notify.NewService, fx.As(new(notify.CodeService)), fx.ResultTags(`name:"impl"`)),
			fx.Annotate(notify.NewRateLimitedCodeService, fx.ParamTags(`name:"impl"`), fx.As(new(notify.CodeService))),
		),
		fx.Invoke(func(s notify.CodeService) { svc = s }),
	)
	app.RequireStart()
	defer app.RequireStop()
	requireLimited(t, svc, box)
}

// TestFxProvideWrapperIsRefused pins down why the docs say fx.Decorate: a
// wrapper provider that takes and returns the interface, given to
// fx.Provide beside a provider of the interface, is a second provider of
// one type, which fx refuses.
func TestFxProvideWrapperIsRefused(t *testing.T) {
	app := fx.New(
		fxOptions(new(mailbox)),
		fx.Provide(
			fx.Annotate(notify.NewService, fx.As(new(notify.CodeService))),
			newCodeService,
		),
		fx.Invoke(func(notify.CodeService) {}),
	)
	require.Error(t, app.Err())
	assert.ErrorContains(t, app.Err(), "cannot provide notify.CodeService from [0]: already provided")
	t.Logf("fx.New: %v", app.Err())
}
