//go:build linux

package redistest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// On Linux every redis-server is started with PR_SET_PDEATHSIG so the kernel
// kills it when the test binary dies without running t.Cleanup (go test
// -timeout, a crash, an interrupted run). The kernel sends that signal when
// the *thread* that forked the child exits, not the process, and the Go
// runtime may retire threads; so all processes are forked from one goroutine
// locked to its thread for the life of the test binary (see
// https://github.com/golang/go/issues/27505).

type spawnRequest struct {
	cmd    *exec.Cmd
	result chan error
}

var (
	spawnOnce     sync.Once
	spawnRequests = make(chan spawnRequest)
)

// startProcess starts cmd so that it dies with the test binary.
func startProcess(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	spawnOnce.Do(func() { go spawner() })
	req := spawnRequest{cmd: cmd, result: make(chan error, 1)}
	spawnRequests <- req
	return <-req.result
}

// spawner forks every child from the same, never-released OS thread.
func spawner() {
	runtime.LockOSThread() // deliberately never unlocked; see above
	for req := range spawnRequests {
		req.result <- req.cmd.Start()
	}
}
