package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// sentinelMasterName is the name the sentinels monitor the master under,
	// which clients pass as FailoverOptions.MasterName.
	sentinelMasterName = "mymaster"

	// sentinelCount and sentinelQuorum: three sentinels, two of which must
	// agree that the master is down. The smallest layout in which one
	// sentinel can be wrong (or dead) without blocking or faking a failover.
	sentinelCount  = 3
	sentinelQuorum = 2

	// sentinelDownAfter is how long the master may not answer before a
	// sentinel flags it as down. Small, so tests that stop the master see the
	// automatic failover within seconds, but well above the stalls a loaded
	// 2-core machine gives a healthy server or a sentinel (one writing its
	// configuration file, say): a failover of a healthy master, once an old
	// master has restarted empty, can promote the empty one and wipe the
	// data. It is also above the sentinels' 2 s TILT trigger, so a sentinel
	// that was itself starved for longer stops acting rather than trusting
	// its stale view.
	sentinelDownAfter = 3000 * time.Millisecond

	// sentinelFailoverTimeout bounds one failover attempt in the sentinels;
	// an attempt that has not promoted the replica by then is abandoned.
	sentinelFailoverTimeout = 5000 * time.Millisecond

	// sentinelTimeout bounds waiting for the sentinels to converge after an
	// operation. Only a broken setup gets near it. It exceeds, with room to
	// spare, the sentinels' worst case for turning an old master into a
	// replica with their default periods (see sentinelPeriods): about 20 s.
	sentinelTimeout = 45 * time.Second
)

// sentinelPeriods shortens two of the sentinels' internal periods with
// SENTINEL DEBUG (Redis 7.0 and later; older sentinels keep their defaults,
// which only makes tests slower). INFO-PERIOD (default 10 s) is how often a
// sentinel reads INFO from a healthy master or replica, which is how it
// learns of a new replica and notices that an old master still claims the
// role; PUBLISH-PERIOD (default 2 s) is how often sentinels announce
// themselves to each other, and a sentinel waits four of them before turning
// an old master into a replica. The defaults make a graceful failover take
// about 20 s to settle; these about 3 s. What the sentinels do, and in which
// order, is unchanged.
var sentinelPeriods = []any{"INFO-PERIOD", 1000, "PUBLISH-PERIOD", 500}

// Sentinel is a Sentinel-managed Redis on 127.0.0.1: two redis-server
// processes, one master and one replica, watched by three sentinels with a
// quorum of two. Every process is killed by t.Cleanup.
//
// Roles change at run time (Failover, or a stopped master replaced by the
// replica), so Master and Replica ask the sentinels and the servers rather
// than remember. Stop the Server that Master returns to make the sentinels
// fail over on their own: Master then waits for, and returns, its successor.
type Sentinel struct {
	servers   []*Server // master and replica, in the order started
	sentinels []*sentinelNode
}

// StartSentinel starts a master, a replica of it, and three sentinels
// monitoring the master as MasterName(), and returns once every sentinel
// reports that master, knows the replica as healthy, and knows the two other
// sentinels. opts apply to both redis-servers, not to the sentinels.
//
// The sentinels consider the master down after 3 s without an answer and
// abandon a failover attempt after 5 s.
func StartSentinel(t testing.TB, opts ...ServerOption) *Sentinel {
	t.Helper()
	s := &Sentinel{}
	master := StartServer(t, opts...)
	replicaOpts := append(slices.Clone(opts), WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	replica := StartServer(t, replicaOpts...)
	s.servers = []*Server{master, replica}

	// A sentinel learns of replicas from the master's INFO, which it reads at
	// once and then once per INFO period: starting the sentinels only once
	// the master lists its replica spares the test a period.
	if err := poll(sentinelTimeout, func() error { return checkReplicating(master, replica) }); err != nil {
		t.Fatalf("redistest: StartSentinel: replica did not sync within %v: %v\n%s", sentinelTimeout, err, s.describe())
	}
	s.awaitCaughtUp(t, "StartSentinel", master, replica)

	bin, ok := sentinelBinary()
	if !ok {
		bin = lookBinary(t, "redis-server")
	}
	for range sentinelCount {
		s.sentinels = append(s.sentinels, startSentinelNode(t, bin, master.Port()))
	}
	err := poll(sentinelTimeout, func() error { return s.checkSettled(master, replica) })
	if err != nil {
		t.Fatalf("redistest: StartSentinel: sentinels did not settle within %v: %v\n%s", sentinelTimeout, err, s.describe())
	}
	return s
}

// sentinelBinary returns redis-sentinel when it is installed. It is the
// same program as redis-server (which runs as a sentinel given --sentinel),
// packaged separately by some distributions.
func sentinelBinary() (string, bool) {
	path, err := exec.LookPath("redis-sentinel")
	return path, err == nil
}

// MasterName returns the name the sentinels monitor the master under, for
// redis.FailoverOptions.MasterName.
func (s *Sentinel) MasterName() string { return sentinelMasterName }

// SentinelAddrs returns the three sentinels' "127.0.0.1:port" addresses, for
// redis.FailoverOptions.SentinelAddrs.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, n := range s.sentinels {
		addrs[i] = hostPort(n.port)
	}
	return addrs
}

// Servers returns the master and the replica as started, in that order,
// whatever their roles now and whether they are running.
func (s *Sentinel) Servers() []*Server { return slices.Clone(s.servers) }

// Client returns a new go-redis failover client (redis.NewFailoverClient)
// for MasterName and every sentinel, with default options, closed when the
// test ends. Like a production client it asks the sentinels for the master
// and follows their switch-master announcements.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    s.MasterName(),
		SentinelAddrs: s.SentinelAddrs(),
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Master returns the current master: the server every sentinel reports for
// MasterName, once it is running and itself reports role:master. While the
// sentinels are replacing a stopped master it waits for them to finish (up
// to 45 s), so after Stop on the master it returns the promoted replica.
//
// After a Failover the old master may still report role:master for a few
// seconds; that does not matter here, since the sentinels' word decides.
func (s *Sentinel) Master(t testing.TB) *Server {
	t.Helper()
	var master *Server
	err := poll(sentinelTimeout, func() error {
		m, err := s.agreedMaster()
		if err != nil {
			return err
		}
		if err := checkRole(m, "master"); err != nil {
			return err
		}
		master = m
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: Master: no agreed, running master within %v: %v\n%s", sentinelTimeout, err, s.describe())
	}
	return master
}

// Replica returns the server that is not the current master, once it is a
// replica the sentinels could promote: it is running, replicates the master
// with its link up, and every sentinel lists it as a replica that is neither
// down nor disconnected, and it has received everything written to the
// master before the call (see awaitCaughtUp). After a Failover that includes waiting for the
// sentinels to turn the old master into a replica, which they do only after
// it has claimed the master role for four hello periods, on their next INFO
// of it: a few seconds with this package's settings (see sentinelPeriods).
func (s *Sentinel) Replica(t testing.TB) *Server {
	t.Helper()
	master := s.Master(t)
	replica := s.other(master)
	err := poll(sentinelTimeout, func() error { return s.checkSettled(master, replica) })
	if err != nil {
		t.Fatalf("redistest: Replica: %s did not become a healthy replica of %s within %v: %v\n%s",
			replica, master, sentinelTimeout, err, s.describe())
	}
	s.awaitCaughtUp(t, "Replica", master, replica)
	return replica
}

// Failover makes the sentinels promote the replica with SENTINEL FAILOVER,
// and returns it once every sentinel reports it as the master and it
// answers role:master.
//
// Both servers must be running. Before asking, Failover waits until the
// replica has received everything the master had written, so a test that makes no writes meanwhile loses
// none. Sentinel itself gives no such promise: it does not pause the old
// master's clients, whose writes after the promotion are lost when the old
// master is turned into a replica (see Replica for when that happens).
func (s *Sentinel) Failover(t testing.TB) *Server {
	t.Helper()
	old := s.Master(t)
	replica := s.Replica(t) // which waits for it to catch up

	ask := func() error {
		var last error
		for _, n := range s.sentinels {
			err := n.do("FAILOVER", sentinelMasterName).Err()
			if err == nil {
				return nil
			}
			last = fmt.Errorf("SENTINEL FAILOVER on %s: %w", n, err)
		}
		return last
	}
	// A sentinel refuses with NOGOODSLAVE when its view of the replica is
	// momentarily stale; asking again shortly after works.
	if err := poll(sentinelTimeout, ask); err != nil {
		t.Fatalf("redistest: Failover: %v\n%s", err, s.describe())
	}
	asked := time.Now()
	err := poll(sentinelTimeout, func() error {
		m, err := s.agreedMaster()
		if err == nil && m != replica {
			err = fmt.Errorf("the sentinels still report %s as master", m)
		}
		if err == nil {
			return checkRole(replica, "master")
		}
		if time.Since(asked) > 2*sentinelFailoverTimeout {
			// The attempt was abandoned (the sentinel gives up after the
			// failover timeout); a new request starts a fresh one. It
			// fails harmlessly if the failover is in fact under way.
			_ = ask()
			asked = time.Now()
		}
		return err
	})
	if err != nil {
		t.Fatalf("redistest: Failover: %s not promoted in place of %s within %v: %v\n%s",
			replica, old, sentinelTimeout, err, s.describe())
	}
	return replica
}

// other returns the data server that is not m.
func (s *Sentinel) other(m *Server) *Server {
	if s.servers[0] == m {
		return s.servers[1]
	}
	return s.servers[0]
}

// byAddr returns the data server listening on addr, or nil.
func (s *Sentinel) byAddr(addr string) *Server {
	for _, srv := range s.servers {
		if srv.Addr() == addr {
			return srv
		}
	}
	return nil
}

// agreedMaster returns the running server that every running sentinel
// reports as master.
func (s *Sentinel) agreedMaster() (*Server, error) {
	var agreed string
	for _, n := range s.sentinels {
		addr, err := n.masterAddr()
		if err != nil {
			return nil, err
		}
		switch {
		case agreed == "":
			agreed = addr
		case addr != agreed:
			return nil, fmt.Errorf("sentinels disagree on the master: %s and %s", agreed, addr)
		}
	}
	m := s.byAddr(agreed)
	if m == nil {
		return nil, fmt.Errorf("the sentinels report %s as master, which is not one of this setup's servers", agreed)
	}
	if !m.Running() {
		return nil, fmt.Errorf("the sentinels still report stopped %s as master", m)
	}
	return m, nil
}

// checkSettled returns nil when replica replicates master with its link up
// and every sentinel reports master as such, sees it up, lists replica as
// a healthy replica of it, and knows the other sentinels.
func (s *Sentinel) checkSettled(master, replica *Server) error {
	if err := checkReplicating(master, replica); err != nil {
		return err
	}
	for _, n := range s.sentinels {
		addr, err := n.masterAddr()
		if err != nil {
			return err
		}
		if addr != master.Addr() {
			return fmt.Errorf("%s reports %s as master, want %s", n, addr, master.Addr())
		}
		m, err := n.fields("MASTER", sentinelMasterName)
		if err != nil {
			return err
		}
		if m["flags"] != "master" {
			return fmt.Errorf("%s sees master %s with flags %s", n, master, m["flags"])
		}
		if want := strconv.Itoa(sentinelCount - 1); m["num-other-sentinels"] != want {
			return fmt.Errorf("%s knows %s other sentinels, want %s", n, m["num-other-sentinels"], want)
		}
		replicas, err := n.fieldsList("REPLICAS", sentinelMasterName)
		if err != nil {
			return err
		}
		var found bool
		for _, r := range replicas {
			if hostPort(atoiOr(r["port"], -1)) != replica.Addr() || r["ip"] != "127.0.0.1" {
				continue
			}
			found = true
			if r["flags"] != "slave" || r["master-link-status"] != "ok" {
				return fmt.Errorf("%s sees replica %s with flags %s, master-link-status %s",
					n, replica, r["flags"], r["master-link-status"])
			}
		}
		if !found {
			return fmt.Errorf("%s does not list %s among the replicas of %s", n, replica, master)
		}
	}
	return nil
}

// checkRole returns nil when srv is running and INFO replication reports
// role (master or slave).
func checkRole(srv *Server, role string) error {
	repl, err := replicationInfo(srv)
	if err != nil {
		return err
	}
	if got, _ := infoField(repl, "role"); got != role {
		return fmt.Errorf("%s reports role:%s, want %s", srv, got, role)
	}
	return nil
}

// checkReplicating returns nil when replica reports master as its master
// with the link up and master lists it among its connected replicas.
func checkReplicating(master, replica *Server) error {
	repl, err := replicationInfo(replica)
	if err != nil {
		return err
	}
	host, _ := infoField(repl, "master_host")
	port, _ := infoField(repl, "master_port")
	if role, _ := infoField(repl, "role"); role != "slave" || hostPort(atoiOr(port, -1)) != master.Addr() || host != "127.0.0.1" {
		return fmt.Errorf("%s reports role:%s master %s:%s, want a replica of %s", replica, role, host, port, master)
	}
	if link, _ := infoField(repl, "master_link_status"); link != "up" {
		return fmt.Errorf("replica %s has master_link_status:%s", replica, link)
	}
	mrepl, err := replicationInfo(master)
	if err != nil {
		return err
	}
	if !strings.Contains(mrepl, "port="+strconv.Itoa(replica.Port())+",state=online") {
		return fmt.Errorf("master %s does not list %s as an online replica", master, replica)
	}
	return nil
}

// syncProbeChannel is where awaitCaughtUp publishes: a standalone master
// replicates PUBLISH to its replicas, so it advances the replication stream
// without touching the keyspace that tests look at.
const syncProbeChannel = "__redistest__:sync-probe"

// awaitCaughtUp publishes on master and waits until replica has processed
// the replication stream up to that message, failing t otherwise.
//
// "master_link_status:up" on the replica is not enough: after a diskless
// full sync, Redis 7 starts streaming writes to the replica only once the
// replica's first REPLCONF ACK arrives, up to a second later, although both
// sides already report the link as up and the replica as online. A master
// lost in that window takes everything written since the sync with it.
func (s *Sentinel) awaitCaughtUp(t testing.TB, op string, master, replica *Server) {
	t.Helper()
	admin := master.adminClient()
	if admin == nil {
		t.Fatalf("redistest: %s: %s is not running\n%s", op, master, s.describe())
	}
	if err := admin.Publish(context.Background(), syncProbeChannel, "probe").Err(); err != nil {
		t.Fatalf("redistest: %s: PUBLISH on %s: %v\n%s", op, master, err, s.describe())
	}
	mrepl, err := replicationInfo(master)
	if err != nil {
		t.Fatalf("redistest: %s: %v\n%s", op, err, s.describe())
	}
	field, _ := infoField(mrepl, "master_repl_offset")
	target := atoiOr(field, -1)
	if target <= 0 {
		t.Fatalf("redistest: %s: %s reports master_repl_offset:%s after a PUBLISH\n%s", op, master, field, s.describe())
	}
	err = poll(sentinelTimeout, func() error {
		rrepl, err := replicationInfo(replica)
		if err != nil {
			return err
		}
		got, _ := infoField(rrepl, "slave_repl_offset")
		if atoiOr(got, -1) < target {
			return fmt.Errorf("replica %s at offset %s, behind %s at %d", replica, got, master, target)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: %s: replica did not catch up within %v: %v\n%s", op, sentinelTimeout, err, s.describe())
	}
}

// replicationInfo returns srv's INFO replication.
func replicationInfo(srv *Server) (string, error) {
	admin := srv.adminClient()
	if admin == nil {
		return "", fmt.Errorf("%s is not running", srv)
	}
	repl, err := admin.Info(context.Background(), "replication").Result()
	if err != nil {
		return "", fmt.Errorf("INFO replication on %s: %w", srv, err)
	}
	return repl, nil
}

// atoiOr parses s, or returns def if it is not a number.
func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// describe renders every process's view and last log lines, for failure
// messages about the setup as a whole.
func (s *Sentinel) describe() string {
	var b strings.Builder
	b.WriteString("servers:\n")
	for _, srv := range s.servers {
		state := "stopped"
		if srv.Running() {
			if repl, err := replicationInfo(srv); err != nil {
				state = "running, " + err.Error()
			} else {
				role, _ := infoField(repl, "role")
				link, _ := infoField(repl, "master_link_status")
				state = "running, role:" + role
				if link != "" {
					state += ", master_link_status:" + link
				}
			}
		}
		fmt.Fprintf(&b, "== %s: %s\n%s\n", srv, state, srv.Log(8))
	}
	b.WriteString("sentinels:\n")
	for _, n := range s.sentinels {
		view := "?"
		if addr, err := n.masterAddr(); err != nil {
			view = err.Error()
		} else {
			view = "reports master " + addr
		}
		fmt.Fprintf(&b, "== %s: %s\n%s\n", n, view, n.log.tail(8))
	}
	return b.String()
}

// sentinelNode is one sentinel process. Unlike a Server it cannot be
// stopped by a test: the setups tests need lose data nodes, not sentinels.
type sentinelNode struct {
	bin  string
	dir  string
	port int
	log  logBuffer

	mu    sync.Mutex
	proc  *process
	admin *redis.Client
}

// startSentinelNode starts a sentinel monitoring the master on masterPort,
// retrying on another port when the chosen one turns out to be taken. Its
// cleanup is registered before it starts.
func startSentinelNode(t testing.TB, bin string, masterPort int) *sentinelNode {
	t.Helper()
	n := &sentinelNode{bin: bin, dir: t.TempDir()}
	t.Cleanup(func() {
		if err := n.kill(); err != nil {
			t.Errorf("redistest: cleanup of %s: %v", n, err)
		}
	})
	var failures []string
	for range startAttempts {
		port, err := pickPort(false)
		if err != nil {
			t.Fatalf("redistest: starting sentinel: %v", err)
		}
		n.port = port
		err = n.launch(masterPort)
		if err == nil {
			if err := n.do(append([]any{"DEBUG"}, sentinelPeriods...)...).Err(); err != nil {
				fmt.Fprintf(&n.log, "--- redistest: SENTINEL DEBUG failed (%v); default periods apply\n", err)
			}
			return n
		}
		if !errors.Is(err, errPortInUse) {
			t.Fatalf("redistest: starting %s: %v\nlast lines of its log:\n%s", n, err, n.log.tail(logLinesInErrors))
		}
		failures = append(failures, fmt.Sprintf("port %d: %v", port, err))
	}
	t.Fatalf("redistest: starting sentinel: every port tried was taken by another process:\n%s\nlast lines of its log:\n%s",
		strings.Join(failures, "\n"), n.log.tail(logLinesInErrors))
	return nil
}

// String identifies the sentinel in messages.
func (n *sentinelNode) String() string { return "sentinel " + hostPort(n.port) }

// config returns the sentinel's configuration file. A sentinel must be
// started from a file it can rewrite: it records there what it learns
// (replicas, other sentinels, the current master, its own ID).
func (n *sentinelNode) config(masterPort int) string {
	lines := []string{
		"port " + strconv.Itoa(n.port),
		"bind 127.0.0.1",
		"protected-mode no",
		"daemonize no",
		`logfile ""`, // log to stdout, which we capture
		"dir " + strconv.Quote(n.dir),
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", sentinelMasterName, masterPort, sentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", sentinelMasterName, sentinelDownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", sentinelMasterName, sentinelFailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", sentinelMasterName),
	}
	return strings.Join(lines, "\n") + "\n"
}

// launch writes the configuration for n.port and runs the sentinel,
// waiting until it answers PING.
func (n *sentinelNode) launch(masterPort int) error {
	conf := filepath.Join(n.dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(n.config(masterPort)), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", conf, err)
	}
	args := []string{conf}
	if filepath.Base(n.bin) != "redis-sentinel" {
		args = append(args, "--sentinel")
	}
	p, mark, err := spawn(n.bin, args, n.dir, nil, &n.log)
	if err != nil {
		return err
	}
	err = poll(startTimeout, func() error {
		select {
		case <-p.done:
			if strings.Contains(n.log.since(mark), "in use") {
				return permanent(fmt.Errorf("%w: sentinel could not bind port %d", errPortInUse, n.port))
			}
			return permanent(fmt.Errorf("sentinel exited before answering PING (%v)", p.err))
		default:
		}
		pid, err := probePID(hostPort(n.port), nil)
		if err != nil {
			return fmt.Errorf("not answering PING within %v: %w", startTimeout, err)
		}
		if pid != p.cmd.Process.Pid {
			return permanent(fmt.Errorf("%w: port %d is served by another process (pid %d)", errPortInUse, n.port, pid))
		}
		return nil
	})
	if err != nil {
		_ = p.kill()
		return err
	}
	n.mu.Lock()
	n.proc, n.admin = p, newAdminClient(hostPort(n.port), probeTimeout, nil)
	n.mu.Unlock()
	return nil
}

// do runs SENTINEL args... on this sentinel.
func (n *sentinelNode) do(args ...any) *redis.Cmd {
	n.mu.Lock()
	admin := n.admin
	n.mu.Unlock()
	if admin == nil {
		cmd := redis.NewCmd(context.Background())
		cmd.SetErr(fmt.Errorf("%s is not running", n))
		return cmd
	}
	return admin.Do(context.Background(), append([]any{"SENTINEL"}, args...)...)
}

// masterAddr returns the master address this sentinel reports.
func (n *sentinelNode) masterAddr() (string, error) {
	hp, err := n.do("GET-MASTER-ADDR-BY-NAME", sentinelMasterName).StringSlice()
	if err != nil {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: %w", n, err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: unexpected reply %q", n, hp)
	}
	return hp[0] + ":" + hp[1], nil
}

// fields runs a SENTINEL subcommand that replies with one instance's
// field-value list, such as MASTER.
func (n *sentinelNode) fields(args ...any) (map[string]string, error) {
	reply, err := n.do(args...).Result()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL %v on %s: %w", args, n, err)
	}
	m, err := fieldMap(reply)
	if err != nil {
		return nil, fmt.Errorf("SENTINEL %v on %s: %w", args, n, err)
	}
	return m, nil
}

// fieldsList runs a SENTINEL subcommand that replies with a list of
// field-value lists, such as REPLICAS.
func (n *sentinelNode) fieldsList(args ...any) ([]map[string]string, error) {
	reply, err := n.do(args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL %v on %s: %w", args, n, err)
	}
	out := make([]map[string]string, 0, len(reply))
	for _, r := range reply {
		m, err := fieldMap(r)
		if err != nil {
			return nil, fmt.Errorf("SENTINEL %v on %s: %w", args, n, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// fieldMap turns a RESP2 flat field-value array into a map.
func fieldMap(reply any) (map[string]string, error) {
	list, ok := reply.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, fmt.Errorf("unexpected reply %v, want a field-value list", reply)
	}
	m := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		m[fmt.Sprint(list[i])] = fmt.Sprint(list[i+1])
	}
	return m, nil
}

// kill stops the sentinel, if running, for cleanup.
func (n *sentinelNode) kill() error {
	n.mu.Lock()
	p, admin := n.proc, n.admin
	n.proc, n.admin = nil, nil
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	_ = admin.Close()
	return p.kill()
}
