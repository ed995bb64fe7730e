//go:build unix

package redistest

import (
	"os"
	"syscall"
)

// Freezing with SIGSTOP is the most faithful way to get a server that
// accepts connections (the kernel completes the handshake) yet never answers:
// exactly what a client sees from a hung or overloaded Redis.
var (
	signalPause  os.Signal = syscall.SIGSTOP
	signalResume os.Signal = syscall.SIGCONT
)
