package redislimit

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// TestTLS runs the limiter against a TLS-only redis-server that requires
// client certificates, all made by the test. A client connecting by a
// rediss:// URL with its certificate decides exactly; one without a
// certificate is refused by the server, which Check, the degraded
// decisions and the log report as a refusal.
func TestTLS(t *testing.T) {
	certs := redistest.NewCertificates(t)
	srv := redistest.StartServer(t, redistest.WithTLS(certs))
	bg := context.Background()
	l := runtime.Limit{Name: "tls.limit", Window: time.Minute, Max: 3}
	client := func(t *testing.T, withCert bool) *redis.Client {
		opt, err := redis.ParseURL(srv.URL())
		require.NoError(t, err)
		require.NotNil(t, opt.TLSConfig, "rediss:// means TLS")
		tlsCfg := certs.ServerOnlyTLS()
		if withCert {
			tlsCfg = certs.ClientTLS()
		}
		opt.TLSConfig.RootCAs, opt.TLSConfig.Certificates = tlsCfg.RootCAs, tlsCfg.Certificates
		c := redis.NewClient(opt)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	t.Run("client certificate", func(t *testing.T) {
		run := newACLRun(t, client(t, true))
		rep, err := run.lim.Check(bg)
		require.NoError(t, err)
		require.Equal(t, map[string]string{srv.Addr(): srv.Version(t)}, rep.Versions)
		for i := range l.Max + 1 {
			d, err := run.lim.Allow(bg, l, "k")
			require.NoError(t, err)
			require.Equal(t, i < l.Max, d.Allowed, "call %d: exactly Max admitted", i+1)
		}
		require.Empty(t, run.events.since(0), "Redis decided every call")
		require.Empty(t, run.errorLines())
	})

	t.Run("no client certificate", func(t *testing.T) {
		run := newACLRun(t, client(t, false), WithInstances(1))
		_, err := run.lim.Check(bg)
		t.Logf("Check: %v", err)
		require.ErrorIs(t, err, ErrPermission)
		require.Contains(t, err.Error(), "certificate")
		// The decisions follow the policy; what they see of the refusal
		// (the alert, or a connection reset by the server) is a race that
		// only Check's own handshake avoids.
		for i := range 2 {
			ds, err := run.lim.Decide(bg, runtime.Request{Limit: l, Key: "k"})
			require.NoError(t, err)
			require.Equal(t, runtime.SourceFallback, ds.Source, "call %d", i+1)
			t.Logf("call %d: %v", i+1, ds.Cause)
		}
		t.Logf("logged:\n%s", run.logs.String())
		lines := slices.DeleteFunc(run.errorLines(), func(l string) bool { return !strings.Contains(l, "TLS") })
		require.Len(t, lines, 1, "logged once")
		require.Contains(t, lines[0], `missing="TLS client certificate"`)
		require.Contains(t, lines[0], "tls: certificate required")
	})
}
