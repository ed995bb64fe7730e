//go:build !linux

package redistest

import "os/exec"

// startProcess starts cmd. Outside Linux there is no portable way to tie a
// child's life to ours, so only t.Cleanup stops it.
func startProcess(cmd *exec.Cmd) error {
	return cmd.Start()
}
