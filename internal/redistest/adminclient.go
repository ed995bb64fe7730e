package redistest

import (
	"crypto/tls"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// newAdminClient returns the client this package uses for its own commands
// (readiness probes, CLUSTER commands, MIGRATE). It fails fast instead of
// retrying, because every caller either polls or wants the first error, and it
// skips the optional handshakes (client identity, maintenance notifications)
// that only add noise against the servers tests run. tlsConfig is nil for
// a server without TLS.
func newAdminClient(addr string, readTimeout time.Duration, tlsConfig *tls.Config) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     addr,
		TLSConfig:                tlsConfig,
		Protocol:                 2,
		DialTimeout:              time.Second,
		DialerRetries:            1,
		ReadTimeout:              readTimeout,
		WriteTimeout:             readTimeout,
		MaxRetries:               -1,
		PoolSize:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}
