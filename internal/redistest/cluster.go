package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterMasters is how many masters StartCluster starts: the smallest
	// layout in which a master can fail and be replaced while a majority of
	// masters remains to vote.
	clusterMasters = 3

	// clusterNodeTimeout is how long a node may be unreachable before the
	// others flag it as failing. Small, so tests that stop a master see the
	// automatic failover quickly; still far above any scheduling hiccup.
	clusterNodeTimeout = 2000 * time.Millisecond

	// clusterTimeout bounds waiting for the cluster to converge after an
	// operation; only a broken setup gets near it.
	clusterTimeout = 30 * time.Second

	// hashSlots is the fixed number of Redis Cluster hash slots.
	hashSlots = 16384
)

// Cluster is a Redis Cluster of three masters with one replica each (or
// more, see StartClusterWith): redis-server processes on 127.0.0.1, each a
// Server that can be stopped and restarted on its own. All of them are
// killed by t.Cleanup.
//
// Roles change at run time (Failover, or a stopped master replaced by its
// replica), so Masters, Replicas, MasterFor and ReplicaOf ask the running
// nodes rather than remember.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts six cluster-enabled servers, joins them with
// `redis-cli --cluster create --cluster-replicas 1`, and returns once every
// node reports cluster_state:ok with all 16384 slots assigned, every node
// sees every other as connected and agrees on which node serves which slots,
// and every replica's link to its master is up. opts apply to every node.
//
// Nodes use a cluster-node-timeout of 2s and cluster-require-full-coverage
// no: a stopped master takes down only its own slots. WithArgs can override
// either.
func StartCluster(t testing.TB, opts ...ServerOption) *Cluster {
	t.Helper()
	return StartClusterWith(t, 1, opts...)
}

// StartClusterWith is StartCluster with replicas replicas per master, so
// 3·(1+replicas) servers.
func StartClusterWith(t testing.TB, replicas int, opts ...ServerOption) *Cluster {
	t.Helper()
	if replicas < 1 {
		t.Fatalf("redistest: StartClusterWith: %d replicas per master; a master needs one to fail over to", replicas)
	}
	cli := lookBinary(t, "redis-cli")
	c := &Cluster{}
	for range clusterMasters * (1 + replicas) {
		s := newServer(t, true, opts)
		s.startOnFreePort(t)
		c.nodes = append(c.nodes, s)
	}

	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: StartCluster: redis-cli %s: %v\n%s\n%s", strings.Join(args, " "), err, out, c.describe())
	}
	c.awaitHealthy(t, "StartCluster")
	return c
}

// Nodes returns every node, in a fixed order, whatever their role and
// whether they are running.
func (c *Cluster) Nodes() []*Server { return slices.Clone(c.nodes) }

// Addrs returns the addresses of every node, in the order of Nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a new go-redis cluster client seeded with every node's
// address, with default options, closed when the test ends. Like a
// production client it learns the slot map itself and follows MOVED and ASK.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Masters returns the running nodes that currently report themselves as
// masters, in the order of Nodes. Right after StartCluster there are three.
func (c *Cluster) Masters() []*Server {
	return c.runningWhere(nodeEntry.master)
}

// Replicas returns the running nodes that currently report themselves as
// replicas, in the order of Nodes.
func (c *Cluster) Replicas() []*Server {
	return c.runningWhere(nodeEntry.replica)
}

// runningWhere returns the running nodes whose own view of themselves
// satisfies keep. A node that cannot be asked is left out.
func (c *Cluster) runningWhere(keep func(nodeEntry) bool) []*Server {
	var out []*Server
	for _, n := range c.nodes {
		if self, err := c.self(n); err == nil && keep(self) {
			out = append(out, n)
		}
	}
	return out
}

// KeySlot returns the hash slot of key, as computed by a running node
// (CLUSTER KEYSLOT), so hash tags are handled exactly as Redis does.
func (c *Cluster) KeySlot(t testing.TB, key string) int {
	t.Helper()
	for _, n := range c.nodes {
		admin := n.adminClient()
		if admin == nil {
			continue
		}
		slot, err := admin.ClusterKeySlot(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("redistest: KeySlot: CLUSTER KEYSLOT %q on %s: %v", key, n, err)
		}
		return int(slot)
	}
	t.Fatalf("redistest: KeySlot: no cluster node is running")
	return 0
}

// MasterFor returns the master currently serving key's slot: the running
// node that reports itself as a master owning that slot.
func (c *Cluster) MasterFor(t testing.TB, key string) *Server {
	t.Helper()
	return c.MasterForSlot(t, c.KeySlot(t, key))
}

// MasterForSlot returns the master currently serving slot: the running node
// that reports itself as a master owning it. During a SlotMigration that is
// still the source node.
func (c *Cluster) MasterForSlot(t testing.TB, slot int) *Server {
	t.Helper()
	checkSlot(t, "MasterForSlot", slot)
	for _, n := range c.nodes {
		if self, err := c.self(n); err == nil && self.master() && self.owns(slot) {
			return n
		}
	}
	t.Fatalf("redistest: MasterForSlot: no running master serves slot %d\n%s", slot, c.describe())
	return nil
}

// ReplicaOf returns a running replica of master, according to the replicas'
// own view.
func (c *Cluster) ReplicaOf(t testing.TB, master *Server) *Server {
	t.Helper()
	c.mustContain(t, "ReplicaOf", master)
	for _, n := range c.nodes {
		if self, err := c.self(n); err == nil && self.replica() && self.masterID == master.ID() {
			return n
		}
	}
	t.Fatalf("redistest: ReplicaOf: no running replica of %s\n%s", master, c.describe())
	return nil
}

// ReplicasOf returns the running replicas of master, according to the
// replicas' own view, in the order of Nodes.
func (c *Cluster) ReplicasOf(t testing.TB, master *Server) []*Server {
	t.Helper()
	c.mustContain(t, "ReplicasOf", master)
	return c.runningWhere(func(e nodeEntry) bool { return e.replica() && e.masterID == master.ID() })
}

// checkSlot fails t when slot is not a hash slot.
func checkSlot(t testing.TB, op string, slot int) {
	t.Helper()
	if slot < 0 || slot >= hashSlots {
		t.Fatalf("redistest: %s: slot %d out of range 0-%d", op, slot, hashSlots-1)
	}
}

// mustContain fails t when s is not a node of this cluster.
func (c *Cluster) mustContain(t testing.TB, op string, s *Server) {
	t.Helper()
	if !slices.Contains(c.nodes, s) {
		t.Fatalf("redistest: %s: %v is not a node of this cluster", op, s)
	}
}

// byID returns the node with the given ID, or nil.
func (c *Cluster) byID(id string) *Server {
	for _, n := range c.nodes {
		if n.ID() == id {
			return n
		}
	}
	return nil
}

// view returns n's CLUSTER NODES, parsed.
func (c *Cluster) view(n *Server) ([]nodeEntry, error) {
	admin := n.adminClient()
	if admin == nil {
		return nil, fmt.Errorf("%s is not running", n)
	}
	reply, err := admin.ClusterNodes(context.Background()).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", n, err)
	}
	return parseClusterNodes(reply)
}

// self returns n's view of itself.
func (c *Cluster) self(n *Server) (nodeEntry, error) {
	entries, err := c.view(n)
	if err != nil {
		return nodeEntry{}, err
	}
	for _, e := range entries {
		if e.myself() {
			return e, nil
		}
	}
	return nodeEntry{}, fmt.Errorf("CLUSTER NODES on %s has no myself line", n)
}

// awaitHealthy waits until checkHealthy passes, failing t with the state of
// every node if it does not.
// AwaitHealthy waits until the cluster is healthy as StartCluster leaves
// it, among the running nodes (stopped ones are ignored, though the
// others must agree about them), failing t after 30 s.
func (c *Cluster) AwaitHealthy(t testing.TB) {
	t.Helper()
	c.awaitHealthy(t, "AwaitHealthy")
}

func (c *Cluster) awaitHealthy(t testing.TB, op string) {
	t.Helper()
	if err := poll(clusterTimeout, c.checkHealthy); err != nil {
		t.Fatalf("redistest: %s: cluster not healthy within %v: %v\n%s", op, clusterTimeout, err, c.describe())
	}
}

// checkHealthy returns nil when every running node reports cluster_state:ok
// with all slots assigned, sees the other running nodes as connected and not
// failing, agrees with the other running nodes on roles and slot ownership,
// and, if it is the replica of a running master, has its replication link up.
// Stopped nodes are ignored, except that the others must agree about them.
func (c *Cluster) checkHealthy() error {
	ctx := context.Background()
	var refView string
	var refNode *Server
	for _, n := range c.nodes {
		admin := n.adminClient()
		if admin == nil {
			continue
		}
		info, err := admin.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", n, err)
		}
		for field, want := range map[string]string{
			"cluster_state":          "ok",
			"cluster_slots_assigned": strconv.Itoa(hashSlots),
			"cluster_known_nodes":    strconv.Itoa(len(c.nodes)),
		} {
			if got, _ := infoField(info, field); got != want {
				return fmt.Errorf("%s reports %s:%s, want %s", n, field, got, want)
			}
		}

		entries, err := c.view(n)
		if err != nil {
			return err
		}
		roles := make([]string, 0, len(entries))
		for _, e := range entries {
			peer := c.byID(e.id)
			if peer == nil {
				return fmt.Errorf("%s knows a node %s that is not part of this cluster", n, e.id)
			}
			if peer.Running() && (e.failing() || !e.myself() && !e.connected) {
				return fmt.Errorf("%s sees running %s as %s (link %s)", n, peer, strings.Join(e.flags, ","), linkState(e))
			}
			if e.myself() && e.replica() {
				if master := c.byID(e.masterID); master != nil && master.Running() {
					repl, err := admin.Info(ctx, "replication").Result()
					if err != nil {
						return fmt.Errorf("INFO replication on %s: %w", n, err)
					}
					if link, _ := infoField(repl, "master_link_status"); link != "up" {
						return fmt.Errorf("replica %s has master_link_status:%s", n, link)
					}
				}
			}
			roles = append(roles, e.role())
		}
		slices.Sort(roles)
		view := strings.Join(roles, "\n")
		switch {
		case refNode == nil:
			refView, refNode = view, n
		case view != refView:
			return fmt.Errorf("%s and %s disagree on the topology:\n%s\nversus\n%s", refNode, n, refView, view)
		}
	}
	if refNode == nil {
		return fmt.Errorf("no cluster node is running")
	}
	return nil
}

func linkState(e nodeEntry) string {
	if e.connected {
		return "connected"
	}
	return "disconnected"
}

// describe renders every node's state and last log lines, for failure
// messages about the cluster as a whole.
func (c *Cluster) describe() string {
	var b strings.Builder
	b.WriteString("cluster nodes:\n")
	for _, n := range c.nodes {
		state := "stopped"
		if n.Running() {
			if self, err := c.self(n); err != nil {
				state = "running, " + err.Error()
			} else {
				state = "running, reports " + self.role()
			}
		}
		fmt.Fprintf(&b, "== %s: %s\n%s\n", n, state, n.Log(8))
	}
	return b.String()
}
