//go:build !unix

package redistest

import "os"

// Without job-control signals a process cannot be frozen; Server.Pause and
// Server.Resume fail the test on such platforms.
var (
	signalPause  os.Signal = unsupportedSignal{}
	signalResume os.Signal = unsupportedSignal{}
)

// unsupportedSignal is rejected by os.Process.Signal, which makes the caller
// fail with a readable error.
type unsupportedSignal struct{}

func (unsupportedSignal) String() string { return "SIGSTOP/SIGCONT (unsupported on this platform)" }
func (unsupportedSignal) Signal()        {}
