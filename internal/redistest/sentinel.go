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

	// sentinelFailoverTimeout bounds one failover attempt in the sentinels,
	// unless WithFailoverTimeout; an attempt that has not promoted the
	// replica by then is abandoned.
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

// Sentinel is a Sentinel-managed Redis on 127.0.0.1: a master and one or
// more replicas of it (redis-server processes), watched by three sentinels
// with a quorum of two. Every process is killed by t.Cleanup.
//
// Roles change at run time (Failover, or a stopped master replaced by a
// replica), so Master, Replica and Replicas ask the sentinels and the
// servers rather than remember. Stop the Server that Master returns to make
// the sentinels fail over on their own: Master then waits for, and returns,
// its successor.
type Sentinel struct {
	servers   []*Server // master, then replicas, in the order started
	sentinels []*sentinelNode

	mu      sync.Mutex
	through map[*Server]*StreamProxy // by ReplicateThrough
}

// SentinelOption adjusts the layout StartSentinelWith starts.
type SentinelOption func(*sentinelConfig)

// sentinelConfig is what SentinelOptions edit.
type sentinelConfig struct {
	replicas        int
	all             []ServerOption
	at              map[int][]ServerOption
	failoverTimeout time.Duration
}

// WithReplicas sets how many replicas the master has; the default is 1.
func WithReplicas(n int) SentinelOption {
	return func(c *sentinelConfig) { c.replicas = n }
}

// WithServerOptions applies opts to every redis-server, not to the
// sentinels.
func WithServerOptions(opts ...ServerOption) SentinelOption {
	return func(c *sentinelConfig) { c.all = append(c.all, opts...) }
}

// WithServerOptionsAt applies opts to one redis-server only, after those of
// WithServerOptions: i is its index in Servers, 0 the first master and 1 on
// its replicas. Use it for a replica run under another clock, or given
// --replica-priority so that the sentinels promote it first.
func WithServerOptionsAt(i int, opts ...ServerOption) SentinelOption {
	return func(c *sentinelConfig) {
		if c.at == nil {
			c.at = make(map[int][]ServerOption)
		}
		c.at[i] = append(c.at[i], opts...)
	}
}

// WithFailoverTimeout sets the sentinels' failover-timeout (default 5 s):
// how long one failover attempt may take before it is abandoned, and also
// how long a replica that replicates another address than the master's
// (through a StreamProxy, say) is left alone: the sentinels re-point it at
// the master once this long has passed since they saw it change masters.
// Tests that keep a replica behind a StreamProxy for more than a few
// seconds need it longer.
func WithFailoverTimeout(d time.Duration) SentinelOption {
	return func(c *sentinelConfig) { c.failoverTimeout = d }
}

// StartSentinel starts a master, a replica of it, and three sentinels: it
// is StartSentinelWith(t, WithServerOptions(opts...)).
func StartSentinel(t testing.TB, opts ...ServerOption) *Sentinel {
	t.Helper()
	return StartSentinelWith(t, WithServerOptions(opts...))
}

// StartSentinelWith starts a master, its replicas (one unless WithReplicas)
// and three sentinels monitoring the master as MasterName(), and returns
// once every replica has received everything the master had written and
// every sentinel reports that master, knows each replica as healthy, and
// knows the two other sentinels.
//
// The sentinels consider the master down after 3 s without an answer and
// abandon a failover attempt after 5 s, unless WithFailoverTimeout.
func StartSentinelWith(t testing.TB, opts ...SentinelOption) *Sentinel {
	t.Helper()
	cfg := sentinelConfig{replicas: 1, failoverTimeout: sentinelFailoverTimeout}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.replicas < 1 {
		t.Fatalf("redistest: StartSentinelWith: %d replicas; Sentinel needs at least one to fail over to", cfg.replicas)
	}
	serverOpts := func(i int) []ServerOption {
		return append(slices.Clone(cfg.all), cfg.at[i]...)
	}
	s := &Sentinel{}
	master := StartServer(t, serverOpts(0)...)
	s.servers = []*Server{master}
	for i := 1; i <= cfg.replicas; i++ {
		replicaOpts := append(serverOpts(i), WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
		s.servers = append(s.servers, StartServer(t, replicaOpts...))
	}
	replicas := s.servers[1:]

	// A sentinel learns of replicas from the master's INFO, which it reads at
	// once and then once per INFO period: starting the sentinels only once
	// the master lists its replicas spares the test a period.
	for _, replica := range replicas {
		if err := poll(sentinelTimeout, func() error { return checkReplicating(master, replica) }); err != nil {
			t.Fatalf("redistest: StartSentinel: replica did not sync within %v: %v\n%s", sentinelTimeout, err, s.describe())
		}
		s.awaitCaughtUp(t, "StartSentinel", master, replica)
	}

	bin, ok := sentinelBinary()
	if !ok {
		bin = lookBinary(t, "redis-server")
	}
	for range sentinelCount {
		s.sentinels = append(s.sentinels, startSentinelNode(t, bin, master.Port(), cfg.failoverTimeout))
	}
	for _, replica := range replicas {
		err := poll(sentinelTimeout, func() error { return s.checkSettled(master, replica) })
		if err != nil {
			t.Fatalf("redistest: StartSentinel: sentinels did not settle within %v: %v\n%s", sentinelTimeout, err, s.describe())
		}
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

// Servers returns the master and the replicas as started, in that order,
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
// MasterName, once it is running, not paused, and itself reports
// role:master. While the sentinels are replacing a stopped or paused master
// it waits for them to finish (up to 45 s), so after Stop or Pause on the
// master it returns the promoted replica.
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

// Replica returns the first server, in the order started, that is not
// the current master, once it is a replica the sentinels could promote (see
// Replicas). With one replica, that is the server that is not the master.
func (s *Sentinel) Replica(t testing.TB) *Server {
	t.Helper()
	master := s.Master(t)
	replica := s.others(master)[0]
	s.awaitReplica(t, "Replica", master, replica)
	return replica
}

// Replicas returns every running server that is not the current master, in
// the order started, once each is a replica the sentinels could promote: it
// replicates the master with its link up, every sentinel lists it as a
// replica that is neither down nor disconnected, and it has received
// everything written to the master before the call (see awaitCaughtUp).
// After a Failover that includes waiting for the sentinels to turn the old
// master into a replica, which they do only after it has claimed the master
// role for four hello periods, on their next INFO of it: a few seconds with
// this package's settings (see sentinelPeriods).
//
// A replica that replicates through a StreamProxy counts as replicating
// the master; a held one never catches up, so do not call Replicas while
// one is held.
func (s *Sentinel) Replicas(t testing.TB) []*Server {
	t.Helper()
	master := s.Master(t)
	var replicas []*Server
	for _, r := range s.others(master) {
		if r.Running() {
			s.awaitReplica(t, "Replicas", master, r)
			replicas = append(replicas, r)
		}
	}
	return replicas
}

// awaitReplica waits until replica is a healthy, caught-up replica of
// master, failing t otherwise.
func (s *Sentinel) awaitReplica(t testing.TB, op string, master, replica *Server) {
	t.Helper()
	err := poll(sentinelTimeout, func() error { return s.checkSettled(master, replica) })
	if err != nil {
		t.Fatalf("redistest: %s: %s did not become a healthy replica of %s within %v: %v\n%s",
			op, replica, master, sentinelTimeout, err, s.describe())
	}
	s.awaitCaughtUp(t, op, master, replica)
}

// Failover makes the sentinels promote a replica with SENTINEL FAILOVER,
// and returns it once every sentinel reports it as the master and it
// answers role:master. Which replica is the sentinels' choice: the lowest
// non-zero replica-priority, then the largest replication offset.
//
// Every server must be running. Before asking, Failover waits until each
// replica has received everything the master had written, so a test that
// makes no writes meanwhile loses none. Sentinel itself gives no such
// promise: it does not pause the old master's clients, whose writes after
// the promotion are lost when the old master is turned into a replica (see
// Replicas for when that happens).
func (s *Sentinel) Failover(t testing.TB) *Server {
	t.Helper()
	old := s.Master(t)
	replicas := s.Replicas(t) // which waits for them to catch up

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
	var promoted *Server
	err := poll(sentinelTimeout, func() error {
		m, err := s.agreedMaster()
		if err == nil && !slices.Contains(replicas, m) {
			err = fmt.Errorf("the sentinels still report %s as master", m)
		}
		if err == nil {
			if err = checkRole(m, "master"); err == nil {
				promoted = m
				return nil
			}
		}
		if time.Since(asked) > 2*s.failoverTimeout() {
			// The attempt was abandoned (the sentinel gives up after the
			// failover timeout); a new request starts a fresh one. It
			// fails harmlessly if the failover is in fact under way.
			_ = ask()
			asked = time.Now()
		}
		return err
	})
	if err != nil {
		t.Fatalf("redistest: Failover: no replica promoted in place of %s within %v: %v\n%s",
			old, sentinelTimeout, err, s.describe())
	}
	return promoted
}

// ReplicateThrough re-points replica's replication link at a new
// StreamProxy in front of the current master (REPLICAOF the proxy), and
// returns the proxy once the replica has caught up through it. Holding the
// proxy then holds the master's stream to that replica alone; its link
// stays up, its acknowledgements stop, and the sentinels still see a
// healthy replica of the master, whose INFO lists it. A later Start of
// replica replicates through the proxy again, so it cannot sync while the
// proxy is held.
//
// The sentinels re-point a replica of another address at the master after
// a while (see WithFailoverTimeout); give the setup a failover timeout
// longer than the test keeps the proxy.
func (s *Sentinel) ReplicateThrough(t testing.TB, replica *Server) *StreamProxy {
	t.Helper()
	master := s.Master(t)
	if replica == master || !slices.Contains(s.servers, replica) {
		t.Fatalf("redistest: ReplicateThrough: %s is not a replica of this setup", replica)
	}
	p := StartStreamProxy(t, master.Addr())
	admin := replica.adminClient()
	if admin == nil {
		t.Fatalf("redistest: ReplicateThrough: %s is not running", replica)
	}
	port := strconv.Itoa(p.Port())
	if err := admin.Do(context.Background(), "REPLICAOF", "127.0.0.1", port).Err(); err != nil {
		t.Fatalf("redistest: ReplicateThrough: REPLICAOF 127.0.0.1 %s on %s: %v", port, replica, err)
	}
	// Later values of a single-valued setting win, so a restart replicates
	// through the proxy too.
	replica.args = append(slices.Clone(replica.args), "--replicaof", "127.0.0.1", port)
	s.mu.Lock()
	if s.through == nil {
		s.through = make(map[*Server]*StreamProxy)
	}
	s.through[replica] = p
	s.mu.Unlock()
	err := poll(sentinelTimeout, func() error {
		repl, err := replicationInfo(replica)
		if err != nil {
			return err
		}
		if got, _ := infoField(repl, "master_port"); got != port {
			return fmt.Errorf("%s reports master_port:%s, want the proxy's %s", replica, got, port)
		}
		if link, _ := infoField(repl, "master_link_status"); link != "up" {
			return fmt.Errorf("replica %s has master_link_status:%s", replica, link)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: ReplicateThrough: %v\n%s", err, s.describe())
	}
	s.awaitCaughtUp(t, "ReplicateThrough", master, replica)
	return p
}

// failoverTimeout returns the sentinels' failover-timeout.
func (s *Sentinel) failoverTimeout() time.Duration { return s.sentinels[0].failoverTimeout }

// others returns the data servers that are not m, in the order started.
func (s *Sentinel) others(m *Server) []*Server {
	var out []*Server
	for _, srv := range s.servers {
		if srv != m {
			out = append(out, srv)
		}
	}
	return out
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
	// Asking a frozen server would only time out.
	if m.isPaused() {
		return nil, fmt.Errorf("the sentinels still report paused %s as master", m)
	}
	return m, nil
}

// checkSettled returns nil when replica replicates master with its link up
// and every sentinel reports master as such, sees it up, lists replica as
// a healthy replica of it, and knows the other sentinels.
func (s *Sentinel) checkSettled(master, replica *Server) error {
	s.mu.Lock()
	p := s.through[replica]
	s.mu.Unlock()
	via := master
	if p != nil && p.target == master.Addr() {
		via = &Server{port: p.Port()}
	}
	if err := checkReplicatingVia(master, replica, via); err != nil {
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
	return checkReplicatingVia(master, replica, master)
}

// checkReplicatingVia is checkReplicating for a replica whose link goes to
// via's port, master's own or a proxy's in front of it.
func checkReplicatingVia(master, replica, via *Server) error {
	repl, err := replicationInfo(replica)
	if err != nil {
		return err
	}
	host, _ := infoField(repl, "master_host")
	port, _ := infoField(repl, "master_port")
	if role, _ := infoField(repl, "role"); role != "slave" || hostPort(atoiOr(port, -1)) != via.Addr() || host != "127.0.0.1" {
		return fmt.Errorf("%s reports role:%s master %s:%s, want a replica of %s through %s", replica, role, host, port, master, via.Addr())
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
	bin             string
	dir             string
	port            int
	failoverTimeout time.Duration
	log             logBuffer

	mu    sync.Mutex
	proc  *process
	admin *redis.Client
}

// startSentinelNode starts a sentinel monitoring the master on masterPort,
// with failoverTimeout as its failover-timeout, retrying on another port
// when the chosen one turns out to be taken. Its cleanup is registered
// before it starts.
func startSentinelNode(t testing.TB, bin string, masterPort int, failoverTimeout time.Duration) *sentinelNode {
	t.Helper()
	n := &sentinelNode{bin: bin, dir: t.TempDir(), failoverTimeout: failoverTimeout}
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
		fmt.Sprintf("sentinel failover-timeout %s %d", sentinelMasterName, n.failoverTimeout.Milliseconds()),
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
