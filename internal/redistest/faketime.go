package redistest

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// faketimeHint tells a person how to get libfaketime, which FakeTime needs.
const faketimeHint = "FakeTime preloads libfaketime into redis-server. Install it with: " +
	"sudo apt-get install -y faketime (Debian/Ubuntu), or run `make faketime` as root"

// faketimeLibs are where Debian and source installs put libfaketime.
var faketimeLibs = []string{
	"/usr/lib/*/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

// mallocDebugLibs are where glibc (2.34 and later) puts its malloc-debug
// library.
var mallocDebugLibs = []string{
	"/usr/lib/*/libc_malloc_debug.so.0",
	"/lib/*/libc_malloc_debug.so.0",
	"/usr/lib64/libc_malloc_debug.so.0",
	"/lib64/libc_malloc_debug.so.0",
}

// faketimeEnv returns the environment that offsets a process's wall clock
// by offset, failing t when the libraries it preloads are missing.
func faketimeEnv(t testing.TB, offset time.Duration) []string {
	t.Helper()
	lib := findLib(faketimeLibs)
	if lib == "" {
		t.Fatalf("redistest: libfaketime.so.1 not found (looked for %v): %s", faketimeLibs, faketimeHint)
	}
	// redis-server links jemalloc, and jemalloc and libfaketime each call
	// into the other while initialising, so that redis-server hangs at
	// start-up (libfaketime issue 130). glibc's malloc-debug library, loaded
	// first, breaks the loop.
	debug := findLib(mallocDebugLibs)
	if debug == "" {
		t.Fatalf("redistest: libc_malloc_debug.so.0 not found (looked for %v); FakeTime needs it, from glibc 2.34 or later, "+
			"to start redis-server under libfaketime", mallocDebugLibs)
	}
	return []string{
		"LD_PRELOAD=" + debug + " " + lib,
		// A relative offset in seconds, with µs: TIME's resolution.
		fmt.Sprintf("FAKETIME=%+.6f", offset.Seconds()),
		// Read FAKETIME on every call rather than caching a result for a
		// while, and keep the offset in forked children (a replication
		// or BGSAVE fork) rather than restarting from it.
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_RESET=1",
		// Another machine's monotonic clock is no more related to this one's
		// than its wall clock; the offset concerns the wall clock alone, and
		// Redis's timers stay as they would be.
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

// findLib returns the first file that one of the patterns matches, or "".
func findLib(patterns []string) string {
	for _, p := range patterns {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}
