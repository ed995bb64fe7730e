package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds for waiting on a process. They only decide when to give up on a
// broken setup; a healthy server is ready in milliseconds.
const (
	startTimeout = 10 * time.Second
	stopTimeout  = 10 * time.Second
)

// Timeouts for this package's own commands: probes must not hang on a frozen
// server, while MIGRATE of many keys may legitimately take a while.
const (
	probeTimeout   = time.Second
	commandTimeout = 10 * time.Second
)

// startAttempts is how many ports StartServer tries before giving up; another
// test binary may bind a port between our check and redis-server's bind.
const startAttempts = 5

// logLinesInErrors is how much of a server's log failure messages quote.
const logLinesInErrors = 20

// errPortInUse reports that redis-server could not bind its port.
var errPortInUse = errors.New("port already in use")

// Server is one redis-server process listening on 127.0.0.1 on a free port,
// with its own temporary directory. It is killed by t.Cleanup of the test that
// created it. Stop and Start let a test take it away and bring it back on the
// same address, as a client would see across a Redis restart.
//
// A Server's methods may be called from several goroutines, but Stop, Start,
// Pause and Resume are not meant to race with each other.
type Server struct {
	bin     string
	under   []string
	env     []string // added to redis-server's environment
	dir     string
	cluster bool
	args    []string
	tls     *Certificates // nil without TLS
	log     logBuffer
	port    int // fixed by the first successful start
	id      string

	mu     sync.Mutex
	proc   *process      // nil while stopped
	admin  *redis.Client // this package's client; nil while stopped
	paused bool
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // cmd.Wait's result, readable after done is closed
}

// StartServer starts a standalone redis-server and waits until it answers
// PING. It fails t, with the server's log, if that does not happen, and with
// install instructions if redis-server is not installed.
func StartServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	s := newServer(t, false, opts)
	s.startOnFreePort(t)
	return s
}

// newServer prepares a Server and registers its cleanup; it starts nothing.
func newServer(t testing.TB, cluster bool, opts []ServerOption) *Server {
	t.Helper()
	var cfg serverConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	if cluster && cfg.tls != nil {
		t.Fatalf("redistest: WithTLS is for standalone servers; a cluster's nodes would need tls-cluster and tls-replication too")
	}
	s := &Server{
		bin:     lookBinary(t, "redis-server"),
		dir:     t.TempDir(),
		cluster: cluster,
		args:    cfg.extraArgs,
		tls:     cfg.tls,
	}
	if len(cfg.under) > 0 {
		s.under = append([]string{lookBinary(t, cfg.under[0])}, cfg.under[1:]...)
	}
	if cfg.fakeTime != nil {
		s.env = faketimeEnv(t, *cfg.fakeTime)
	}
	// Registered after t.TempDir, so it runs before the directory is removed.
	t.Cleanup(func() {
		if err := s.kill(); err != nil {
			t.Errorf("redistest: cleanup of redis-server %s: %v", s.Addr(), err)
		}
	})
	return s
}

// PID returns the process ID of the running server (of the tool it runs
// under, which is the same process for valgrind), or 0 while it is stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Version returns the server's version as its binary states it
// (redis-server --version: "v=7.0.15"), the version Redis or Valkey
// reports to clients: tests compare with it rather than with the version
// of one distribution.
func (s *Server) Version(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(s.bin, "--version").Output()
	if err != nil {
		t.Fatalf("redistest: %s --version: %v", s.bin, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	t.Fatalf("redistest: %s --version states no version: %q", s.bin, out)
	return ""
}

// Addr returns the server's "127.0.0.1:port" address. It stays the same
// across Stop and Start.
func (s *Server) Addr() string { return hostPort(s.port) }

// Port returns the server's TCP port.
func (s *Server) Port() int { return s.port }

// Dir returns the server's working directory, a t.TempDir.
func (s *Server) Dir() string { return s.dir }

// ID returns the node ID of a cluster node, or "" for a standalone server.
// Node IDs survive Stop and Start because they live in the node's directory.
func (s *Server) ID() string { return s.id }

// Running reports whether the process is running (Stop not called, or Start
// called since). A paused server counts as running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// Log returns the last n lines the server has logged, across all its runs.
// Useful to explain a failure in a test's own message.
func (s *Server) Log(n int) string { return s.log.tail(n) }

// String identifies the server in messages.
func (s *Server) String() string {
	if s.id != "" {
		return fmt.Sprintf("redis-server %s (node %.8s)", s.Addr(), s.id)
	}
	return "redis-server " + s.Addr()
}

// Client returns a new go-redis client for this server with default options
// (over TLS with the client certificate for a server started WithTLS),
// closed when the test ends. It keeps working across Stop and Start, as a
// production client would across a Redis restart.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	return s.ClientAs(t, "", "")
}

// ClientAs is Client for the ACL user name with password (see SetUser);
// an empty name is the default user.
func (s *Server) ClientAs(t testing.TB, name, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: name, Password: password, TLSConfig: s.clientTLS()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// URL returns the server's address as a URL for redis.ParseURL:
// redis://127.0.0.1:port, or rediss:// for a server started WithTLS.
func (s *Server) URL() string {
	if s.tls != nil {
		return "rediss://" + s.Addr()
	}
	return "redis://" + s.Addr()
}

// SetUser runs ACL SETUSER name with rules, such as "on", ">password",
// "~prefix:*" or "+get", replacing whatever name had before (reset), so
// that a test states a user's whole ACL.
func (s *Server) SetUser(t testing.TB, name string, rules ...string) {
	t.Helper()
	admin := s.adminClient()
	if admin == nil {
		t.Fatalf("redistest: SetUser: %s is not running", s)
	}
	args := []any{"ACL", "SETUSER", name, "reset"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("redistest: SetUser: ACL SETUSER %s on %s: %v", name, s, err)
	}
}

// clientTLS returns the TLS configuration of this package's clients, nil
// for a server without TLS.
func (s *Server) clientTLS() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.ClientTLS()
}

// Stop kills the process abruptly (SIGKILL: no shutdown, like a crash or a
// lost host) and returns once connections to its port are refused.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	p := s.detach(t, "Stop")
	_ = p.cmd.Process.Kill()
	s.awaitGone(t, p, "Stop")
}

// StopGracefully asks the server to shut down with SHUTDOWN NOSAVE, as an
// operator restarting Redis would, and returns once connections to its port
// are refused. A paused server is resumed first so it can obey.
func (s *Server) StopGracefully(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	p, admin, paused := s.proc, s.admin, s.paused
	s.mu.Unlock()
	if p == nil {
		t.Fatalf("redistest: StopGracefully: %s is not running", s)
	}
	if paused {
		s.Resume(t)
	}
	// A successful SHUTDOWN closes the connection instead of replying, so
	// only a Redis error reply (a refusal) means it failed.
	err := admin.Do(context.Background(), "SHUTDOWN", "NOSAVE").Err()
	var refusal redis.Error
	if errors.As(err, &refusal) {
		t.Fatalf("redistest: StopGracefully: %s refused SHUTDOWN NOSAVE: %v", s, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("redistest: StopGracefully: %s still running %v after SHUTDOWN NOSAVE\nlast lines of its log:\n%s",
			s, stopTimeout, s.log.tail(logLinesInErrors))
	}
	s.detach(t, "StopGracefully")
	s.awaitGone(t, p, "StopGracefully")
}

// Start starts the server again after Stop, on the same port and with the
// same directory (so a cluster node keeps its identity and configuration), and
// returns once it answers PING.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.Running() {
		t.Fatalf("redistest: Start: %s is already running", s)
	}
	if err := s.launch(s.port); err != nil {
		t.Fatalf("redistest: Start: restarting %s: %v\nlast lines of its log:\n%s", s, err, s.log.tail(logLinesInErrors))
	}
}

// Pause freezes the process (SIGSTOP): connections are still accepted by the
// kernel but nothing is answered, as with a hung or overloaded Redis. Use it
// to test client timeouts. A cluster node paused longer than its node timeout
// is declared failed by the others and, if it is a master, replaced by its
// replica. Resume, Stop and cleanup all work on a paused server.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.signal(t, "Pause", signalPause, true)
}

// Resume continues a process frozen by Pause.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.signal(t, "Resume", signalResume, false)
}

// signal sends sig to the running process and records whether it is paused.
func (s *Server) signal(t testing.TB, op string, sig os.Signal, paused bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		t.Fatalf("redistest: %s: %s is not running", op, s)
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: %s: sending %v to %s: %v", op, sig, s, err)
	}
	s.paused = paused
}

// isPaused reports whether the process is frozen by Pause.
func (s *Server) isPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// startOnFreePort starts the first run of the server, retrying on another
// port when the chosen one turns out to be taken.
func (s *Server) startOnFreePort(t testing.TB) {
	t.Helper()
	var failures []string
	for range startAttempts {
		port, err := pickPort(s.cluster)
		if err != nil {
			t.Fatalf("redistest: starting redis-server: %v", err)
		}
		s.port = port
		err = s.launch(port)
		if err == nil {
			return
		}
		if !errors.Is(err, errPortInUse) {
			t.Fatalf("redistest: starting %s: %v\nlast lines of its log:\n%s", s, err, s.log.tail(logLinesInErrors))
		}
		failures = append(failures, fmt.Sprintf("port %d: %v", port, err))
	}
	t.Fatalf("redistest: starting redis-server: every port tried was taken by another process:\n%s\nlast lines of its log:\n%s",
		strings.Join(failures, "\n"), s.log.tail(logLinesInErrors))
}

// commandArgs returns redis-server's arguments for a run on port.
func (s *Server) commandArgs(port int) []string {
	args := []string{"--port", strconv.Itoa(port)}
	if s.tls != nil {
		args = s.tls.tlsArgs(strconv.Itoa(port))
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--logfile", "", // log to stdout, which we capture
		"--save", "", // tests must not depend on, or pay for, persistence
		"--appendonly", "no",
		// Replicas sync at once instead of the master waiting 5s for more
		// replicas to share the transfer with.
		"--repl-diskless-sync-delay", "0",
	)
	if s.cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout/time.Millisecond)),
			// A dead master only takes its own slots down, as in most
			// production setups that tests want to reason about.
			"--cluster-require-full-coverage", "no",
		)
	}
	return append(args, s.args...)
}

// spawn starts bin with args in dir, with env added to this process's
// environment, its output going to log, and reaps it in the background. mark is log's position before the process wrote
// anything, for error messages about this start alone.
func spawn(bin string, args []string, dir string, env []string, log *logBuffer) (p *process, mark int64, err error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = log
	cmd.Stderr = log
	// A child forked by the server (BGSAVE) may hold the log pipe open after
	// the server dies; do not let it hold up Wait.
	cmd.WaitDelay = time.Second
	fmt.Fprintf(log, "--- redistest: starting %s\n", strings.Join(append(append([]string{}, env...), cmd.Args...), " "))
	mark = log.mark()
	if err := startProcess(cmd); err != nil {
		return nil, mark, fmt.Errorf("running %s: %w", bin, err)
	}
	p = &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, mark, nil
}

// launch runs redis-server on port and waits until it answers. On success the
// new process becomes s.proc; on failure it has been killed.
func (s *Server) launch(port int) error {
	bin, args := s.bin, s.commandArgs(port)
	if len(s.under) > 0 {
		bin, args = s.under[0], append(append(append([]string{}, s.under[1:]...), s.bin), args...)
	}
	p, mark, err := spawn(bin, args, s.dir, s.env, &s.log)
	if err != nil {
		return err
	}

	if err := s.awaitReady(p, port, mark); err != nil {
		_ = p.kill()
		return err
	}
	admin := newAdminClient(hostPort(port), commandTimeout, s.clientTLS())
	if s.cluster {
		id, err := admin.ClusterMyID(context.Background()).Result()
		if err != nil {
			_ = admin.Close()
			_ = p.kill()
			return fmt.Errorf("CLUSTER MYID: %w", err)
		}
		s.id = id
	}
	s.mu.Lock()
	s.proc, s.admin, s.paused = p, admin, false
	s.mu.Unlock()
	return nil
}

// awaitReady polls until the process p answers PING on port. It checks the
// answer comes from p itself (by pid), since when our bind fails the port may
// belong to a redis-server of another test binary.
func (s *Server) awaitReady(p *process, port int, mark int64) error {
	return poll(startTimeout, func() error {
		select {
		case <-p.done:
			if strings.Contains(s.log.since(mark), "in use") {
				return permanent(fmt.Errorf("%w: redis-server could not bind port %d or its cluster bus port", errPortInUse, port))
			}
			return permanent(fmt.Errorf("redis-server exited before answering PING (%v)", p.err))
		default:
		}
		pid, err := probePID(hostPort(port), s.clientTLS())
		if err != nil {
			return fmt.Errorf("not answering PING within %v: %w", startTimeout, err)
		}
		if pid != p.cmd.Process.Pid {
			return permanent(fmt.Errorf("%w: port %d is served by another redis-server (pid %d)", errPortInUse, port, pid))
		}
		return nil
	})
}

// probePID sends PING to addr (over TLS with tlsConfig, if not nil) and returns the answering server's pid. A fresh
// client each time keeps a failed attempt from affecting the next one. The
// plain dial first keeps go-redis from logging every refused connection while
// the server is still starting.
func probePID(addr string, tlsConfig *tls.Config) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return 0, err
	}
	_ = conn.Close()
	c := newAdminClient(addr, probeTimeout, tlsConfig)
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		return 0, err
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	field, ok := infoField(info, "process_id")
	if !ok {
		return 0, errors.New("INFO server reports no process_id")
	}
	return strconv.Atoi(field)
}

// infoField returns the value of name in an INFO reply.
func infoField(info, name string) (string, bool) {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && k == name {
			return v, true
		}
	}
	return "", false
}

// detach forgets the running process and closes the admin client, failing t
// if there is no process.
func (s *Server) detach(t testing.TB, op string) *process {
	t.Helper()
	s.mu.Lock()
	p, admin := s.proc, s.admin
	s.proc, s.admin, s.paused = nil, nil, false
	s.mu.Unlock()
	if p == nil {
		t.Fatalf("redistest: %s: %s is not running", op, s)
	}
	_ = admin.Close()
	return p
}

// awaitGone waits for p to exit and for the port to refuse connections, so a
// test that goes on right away observes the server as down.
func (s *Server) awaitGone(t testing.TB, p *process, op string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("redistest: %s: %s (pid %d) did not exit within %v", op, s, p.cmd.Process.Pid, stopTimeout)
	}
	err := poll(stopTimeout, func() error {
		conn, err := net.DialTimeout("tcp", s.Addr(), probeTimeout)
		if err != nil {
			return nil
		}
		_ = conn.Close()
		return fmt.Errorf("port %d still accepts connections after the process exited", s.port)
	})
	if err != nil {
		t.Fatalf("redistest: %s: %s: %v", op, s, err)
	}
}

// kill stops the process, if any, for cleanup.
func (s *Server) kill() error {
	s.mu.Lock()
	p, admin := s.proc, s.admin
	s.proc, s.admin = nil, nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	_ = admin.Close()
	return p.kill()
}

// kill sends SIGKILL and waits, within stopTimeout, until the process is
// reaped.
func (p *process) kill() error {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("pid %d did not exit within %v of SIGKILL", p.cmd.Process.Pid, stopTimeout)
	}
}

// adminClient returns this package's client for the running server, or nil
// if it is stopped.
func (s *Server) adminClient() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admin
}
