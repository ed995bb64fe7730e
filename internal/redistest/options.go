package redistest

import "time"

// ServerOption adjusts how a redis-server is started. Options apply to every
// node when passed to StartCluster, which refuses WithTLS.
type ServerOption func(*serverConfig)

// serverConfig is what ServerOptions edit.
type serverConfig struct {
	extraArgs []string
	under     []string
	tls       *Certificates
	fakeTime  *time.Duration // nil: the machine's clock
}

// WithArgs appends redis-server command-line arguments, for example
// WithArgs("--maxmemory", "1mb", "--maxmemory-policy", "noeviction").
// They come after this package's defaults, and for single-valued settings
// Redis keeps the last value given, so they can also override a default such
// as --cluster-node-timeout.
func WithArgs(args ...string) ServerOption {
	return func(c *serverConfig) {
		c.extraArgs = append(c.extraArgs, args...)
	}
}

// Under runs redis-server under a tool, the command given with its
// arguments up to redis-server's path, for example
// Under("valgrind", "--tool=callgrind") to count the instructions it runs
// (see Server.PID). The tool must be on the PATH.
func Under(command string, args ...string) ServerOption {
	return func(c *serverConfig) {
		c.under = append([]string{command}, args...)
	}
}

// FakeTime runs redis-server with its wall clock (TIME, key expiry) offset
// from the machine's by offset, as a server on another machine whose clock
// is that far ahead (offset > 0) or behind would be: the state of a
// replica promoted after a failover. Its monotonic clock is left alone.
// It preloads libfaketime (Debian's faketime package) and fails the test
// with install instructions when that is missing.
func FakeTime(offset time.Duration) ServerOption {
	return func(c *serverConfig) {
		c.fakeTime = &offset
	}
}
