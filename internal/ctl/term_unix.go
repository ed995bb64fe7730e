//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package ctl

import "golang.org/x/sys/unix"

// isTerminalFd reports whether fd is a terminal: whether it has terminal
// attributes, which /dev/null, a character device too, has not.
func isTerminalFd(fd uintptr) (terminal, known bool) {
	_, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	return err == nil, true
}
