//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package ctl

// isTerminalFd does not know elsewhere: the caller then takes a character
// device for a terminal.
func isTerminalFd(uintptr) (terminal, known bool) { return false, false }
