package redistest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// Ports are drawn at random from [portLow, portHigh), and a cluster node's bus
// port is its client port plus clusterBusOffset (Redis' fixed rule). The range
// keeps both below 32768, where Linux starts handing out ephemeral ports for
// outgoing connections: a port in that range could be taken by some client's
// socket while a server is stopped, breaking Server.Start on the same port.
// Choosing at random (rather than asking the kernel for port 0) also makes it
// unlikely that the parallel test binaries of `go test ./...` pick the same
// port; when they still do, redis-server fails to bind and the caller retries.
const (
	portLow          = 11000
	portHigh         = 22000
	clusterBusOffset = 10000
)

// pickPort returns a port on which nothing currently listens on 127.0.0.1;
// withBus additionally requires port+clusterBusOffset to be free. The answer
// can go stale before redis-server binds, so callers must still handle a
// failed bind.
func pickPort(withBus bool) (int, error) {
	var lastErr error
	for range 50 {
		port := portLow + rand.IntN(portHigh-portLow)
		if lastErr = portFree(port); lastErr != nil {
			continue
		}
		if withBus {
			if lastErr = portFree(port + clusterBusOffset); lastErr != nil {
				continue
			}
		}
		return port, nil
	}
	return 0, fmt.Errorf("no free port found in %d-%d on 127.0.0.1: %w", portLow, portHigh, lastErr)
}

// portFree reports (as nil) whether a listener can be opened on port.
func portFree(port int) error {
	l, err := net.Listen("tcp", hostPort(port))
	if err != nil {
		return err
	}
	return l.Close()
}

// hostPort is the loopback address every server of this package listens on.
func hostPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
