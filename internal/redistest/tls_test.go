package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestTLSServer starts a TLS-only server: Client talks to it with the
// client certificate, across a restart too, while a client without a
// certificate and a client without TLS are refused.
func TestTLSServer(t *testing.T) {
	certs := NewCertificates(t)
	s := StartServer(t, WithTLS(certs))
	require.Equal(t, "rediss://"+s.Addr(), s.URL())
	ctx := context.Background()
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	port, err := c.ConfigGet(ctx, "port").Result()
	require.NoError(t, err)
	require.Equal(t, "0", port["port"], "no plain-text port")

	s.Stop(t)
	s.Start(t)
	require.NoError(t, c.Ping(ctx).Err(), "the client reconnects over TLS")

	for name, opt := range map[string]*redis.Options{
		"no client certificate": {Addr: s.Addr(), TLSConfig: certs.ServerOnlyTLS(), MaxRetries: -1},
		"no TLS":                {Addr: s.Addr(), MaxRetries: -1},
	} {
		other := redis.NewClient(opt)
		err := other.Ping(ctx).Err()
		_ = other.Close()
		require.Error(t, err, name)
		t.Logf("%s: %v", name, err)
	}
}

// TestSetUser gives a user exactly the rules a test states.
func TestSetUser(t *testing.T) {
	s := StartServer(t)
	s.SetUser(t, "app", "on", ">pw", "~app:*", "+get")
	c := s.ClientAs(t, "app", "pw")
	ctx := context.Background()
	require.ErrorIs(t, c.Get(ctx, "app:k").Err(), redis.Nil, "GET on its keys is allowed")
	require.ErrorContains(t, c.Set(ctx, "app:k", "v", 0).Err(), "NOPERM")
	require.ErrorContains(t, c.Get(ctx, "other").Err(), "NOPERM")

	s.SetUser(t, "app", "on", ">pw", "~app:*", "+set")
	require.ErrorContains(t, c.Get(ctx, "app:k").Err(), "NOPERM", "SetUser replaces the rules")
	require.NoError(t, c.Set(ctx, "app:k", "v", 0).Err())
}
