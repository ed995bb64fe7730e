package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated is the cause of a decision that WithDurable could not
// make durable: not every replica of the node that recorded it
// acknowledged its writes within the wait, or the node had fewer replicas
// connected than it has had. Its admissions stay counted on that node. Check
// the replicas (INFO replication on the primary); once a replica is gone for
// good, docs/redis.md says how to lower the count.
var ErrNotReplicated = errors.New("ratelimit: redis replicas did not acknowledge the decision in time")

// How WithDurable makes a decision durable. A round trip whose scripts
// record admissions is one pipeline on the connection of the node that
// runs them: the scripts, then WAIT for that node's replicas, so that the
// reply says both what was decided and how many replicas hold it. WAIT
// counts the acknowledgements of the writes made on its own connection,
// which is why it cannot go through a client that routes each command
// anew. The calls of one round trip share its WAIT.
//
// How many replicas must acknowledge never comes from how many are
// connected now, which is exactly what a failing replica lowers: on a
// single server, a Sentinel-managed one or a Ring's shard, it is the most
// replicas the node has reported (INFO replication), kept on the node
// itself in prefix+"replicas", which replicates, so a promoted replica
// knows it too; on a Cluster, the node's replicas in CLUSTER NODES, failed
// ones included. A node with fewer replicas online than that fails its
// decisions at once, without running the script.

const (
	// replicasFresh is how long a node's replica count is used before it
	// is read again; replicasAfterError is how soon it is read again once
	// a durable round trip to the node failed, so that a replica that
	// came back is seen at once.
	replicasFresh      = time.Second
	replicasAfterError = 50 * time.Millisecond
)

// replicaCounts holds what a durable limiter knows of each node's replicas.
type replicaCounts struct {
	lim *Limiter
	// key is the high-water mark's key, prefix+"replicas".
	key string
	// byNode holds a *nodeReplicas per node address; a single server's
	// (or a Sentinel's current master's) is under "".
	byNode sync.Map
}

// nodeReplicas is one node's replica count.
type nodeReplicas struct {
	// loading is held by a read that decisions wait for: the first, and
	// the first after a failure; other reads run in the background, one at
	// a time (refreshing).
	loading    sync.Mutex
	refreshing atomic.Bool

	mu sync.Mutex
	// known says want and online were read; want is how many replicas
	// must acknowledge, online how many were online when last read; due
	// is when (mono) they are read again, and suspect says a round trip
	// failed since, so the next decision waits for the read.
	known, suspect bool
	want, online   int64
	due            int64
}

func newReplicaCounts(lim *Limiter) *replicaCounts {
	return &replicaCounts{lim: lim, key: lim.cfg.prefix + "replicas"}
}

// of returns the count of node.
func (rc *replicaCounts) of(node *redis.Client) *nodeReplicas {
	addr := ""
	if rc.lim.sharded {
		addr = node.Options().Addr
	}
	if nr, ok := rc.byNode.Load(addr); ok {
		return nr.(*nodeReplicas)
	}
	nr, _ := rc.byNode.LoadOrStore(addr, &nodeReplicas{})
	return nr.(*nodeReplicas)
}

// need returns how many replicas of node must acknowledge a decision, or
// ErrNotReplicated when fewer are online.
func (rc *replicaCounts) need(ctx context.Context, node *redis.Client) (int64, error) {
	if n := rc.lim.cfg.durableReplicas; n > 0 {
		return int64(n), nil
	}
	nr := rc.of(node)
	want, online, stale, wait := nr.state()
	switch {
	case wait:
		var err error
		if want, online, err = nr.load(ctx, rc, node); err != nil {
			return 0, err
		}
	case stale && nr.refreshing.CompareAndSwap(false, true):
		go func() {
			defer nr.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), rc.lim.cfg.timeout)
			defer cancel()
			_ = nr.refresh(ctx, rc, node)
		}()
	}
	if online < want {
		return want, errNotReplicated(online, want, "online")
	}
	return want, nil
}

// state returns the count, whether it is due to be read again, and
// whether a decision must wait for that read.
func (nr *nodeReplicas) state() (want, online int64, stale, wait bool) {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	stale = mono() >= nr.due
	return nr.want, nr.online, stale, !nr.known || (nr.suspect && stale)
}

// load reads node's count for the decisions that must wait for it, once
// for all of them.
func (nr *nodeReplicas) load(ctx context.Context, rc *replicaCounts, node *redis.Client) (want, online int64, err error) {
	nr.loading.Lock()
	defer nr.loading.Unlock()
	if _, _, _, wait := nr.state(); wait {
		if err := nr.refresh(ctx, rc, node); err != nil {
			return 0, 0, err
		}
	}
	want, online, _, _ = nr.state()
	return want, online, nil
}

// refresh reads node's count; on failure it keeps the count it had and
// reads again soon.
func (nr *nodeReplicas) refresh(ctx context.Context, rc *replicaCounts, node *redis.Client) error {
	want, online, err := rc.count(ctx, node)
	nr.mu.Lock()
	defer nr.mu.Unlock()
	if err != nil {
		nr.due = mono() + int64(replicasAfterError)
		return err
	}
	nr.known, nr.suspect, nr.want, nr.online = true, false, want, online
	nr.due = mono() + int64(replicasFresh)
	return nil
}

// failed makes the next decision on node read its count first, from
// replicasAfterError on: a durable round trip to it failed, and reading
// the count at once would read it again for every failing call.
func (rc *replicaCounts) failed(node *redis.Client) {
	nr := rc.of(node)
	nr.mu.Lock()
	nr.suspect = true
	nr.due = min(nr.due, mono()+int64(replicasAfterError))
	nr.mu.Unlock()
}

// raiseReplicas keeps the most replicas a node has reported in KEYS[1],
// raising it to ARGV[1], and returns it.
var raiseReplicas = redis.NewScript(`local n = tonumber(redis.call('get', KEYS[1]) or '0')
local c = tonumber(ARGV[1])
if c > n then
  redis.call('set', KEYS[1], c)
  return c
end
return n`)

// count reads how many replicas of node must acknowledge a decision, and
// how many are online. A ClusterClient over a server that is no Cluster
// node (a failover client that routes like one, over a Sentinel-managed
// server) counts as a single server does.
func (rc *replicaCounts) count(ctx context.Context, node *redis.Client) (want, online int64, err error) {
	var nodes, info *redis.StringCmd
	if _, ok := rc.lim.client.(*redis.ClusterClient); ok {
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			nodes, info = p.ClusterNodes(ctx), p.Info(ctx, "replication")
			return nil
		})
		if err := nodes.Err(); err != nil && !strings.Contains(err.Error(), "cluster support disabled") {
			return 0, 0, err
		}
	} else {
		info = node.Info(ctx, "replication")
	}
	connected, online := replicationCounts(info.Val())
	switch {
	case info.Err() != nil:
		return 0, 0, info.Err()
	case nodes != nil && nodes.Err() == nil:
		return clusterReplicas(nodes.Val()), online, nil
	}
	want, err = raiseReplicas.Run(ctx, node, []string{rc.key}, connected).Int64()
	return want, online, err
}

// replicationCounts reads INFO replication: how many replicas are
// connected, and how many of them are online (past their first sync).
func replicationCounts(info string) (connected, online int64) {
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "connected_slaves:"); ok {
			connected, _ = strconv.ParseInt(v, 10, 64)
		} else if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") {
			online++
		}
	}
	return connected, online
}

// clusterReplicas reads CLUSTER NODES as the node itself answers it: how
// many nodes replicate it, failed ones included.
func clusterReplicas(nodes string) int64 {
	var self string
	var masters []string
	for line := range strings.Lines(nodes) {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if strings.Contains(f[2], "myself") {
			self = f[0]
		}
		masters = append(masters, f[3])
	}
	var n int64
	for _, m := range masters {
		if self != "" && m == self {
			n++
		}
	}
	return n
}

// errNotReplicated is ErrNotReplicated, saying how many replicas were
// found how (acknowledged, or online) of how many.
func errNotReplicated(found, want int64, how string) error {
	return fmt.Errorf("%w (%d of %d replicas %s)", ErrNotReplicated, found, want, how)
}

// A scriptCall is one script command of a durable round trip, and its
// reply.
type scriptCall struct {
	s     *script
	args  []any
	reply string
	err   error
}

// decidingNode returns the client of the node that runs a script call of
// first key key sent through c.
func decidingNode(ctx context.Context, c doer, key string) (*redis.Client, error) {
	switch c := c.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *redis.Ring:
		return c.GetShardClientForKey(key)
	}
	return nil, fmt.Errorf("ratelimit: WithDurable cannot wait for the replicas of a %T", c)
}

// firstKey returns the first key of a script command (see scriptArgs).
func firstKey(args []any) string {
	switch k := args[3].(type) {
	case string:
		return k
	case *string:
		return *k
	}
	return ""
}

// exec runs the script command args through c as s.exec does; on a
// durable limiter, when writes says the command records something, it
// waits for the replicas of the node that runs it (see execDurable).
func (r *Limiter) exec(ctx context.Context, c doer, s *script, args []any, writes bool) (string, error) {
	if r.replicas == nil || !writes {
		return s.exec(ctx, c, args)
	}
	node, err := decidingNode(ctx, c, firstKey(args))
	if err != nil {
		return "", err
	}
	calls := [1]scriptCall{{s: s, args: args}}
	r.execDurable(ctx, node, calls[:], true)
	return calls[0].reply, calls[0].err
}

// runScript is exec, with the reply's numbers appended to res.
func (r *Limiter) runScript(ctx context.Context, c doer, s *script, args []any, res []int64, writes bool) ([]int64, error) {
	reply, err := r.exec(ctx, c, s, args, writes)
	if err != nil {
		return res, err
	}
	return appendReply(res, reply)
}

// execDurable runs calls on node, in one pipeline followed by one WAIT for
// the node's replicas, and fills their replies. The calls the node
// answered NOSCRIPT go again with EVAL, and a WAIT of their own; on a
// Cluster, those it answered MOVED (the client's map of slots is out of
// date) go once more to the nodes that now serve them, once the client
// has read the map again, and those it answered ASK (their slot is being
// migrated and their key has left) go once to the node importing it,
// each after ASKING, and wait for that node's replicas. A call that ran but whose writes fewer replicas
// acknowledged than the node needs fails with ErrNotReplicated, as does
// every call when fewer are online: a failover could forget them. Calls
// that record nothing (writes false) wait for no replica.
func (r *Limiter) execDurable(ctx context.Context, node *redis.Client, calls []scriptCall, writes bool) {
	r.execOn(ctx, node, calls, writes, followRedirect)
}

// How execOn treats a Cluster's redirections.
type redirect int

const (
	// followRedirect follows MOVED and ASK, once.
	followRedirect redirect = iota
	// redirected follows none: the calls were redirected already.
	redirected
	// asked sends each call after ASKING, and follows none: the calls
	// go to the node an ASK named.
	asked
)

// execOn is execDurable, following redirections as how says.
func (r *Limiter) execOn(ctx context.Context, node *redis.Client, calls []scriptCall, writes bool, how redirect) {
	var n int64
	var err error
	if writes {
		n, err = r.replicas.need(ctx, node)
	}
	if err != nil {
		for i := range calls {
			calls[i].err = err
		}
		r.replicas.failed(node)
		return
	}
	waitMs := int64(max(1, (r.cfg.durableWait+time.Millisecond-1)/time.Millisecond))
	r.pipeWait(ctx, node, calls, n, waitMs, how == asked)
	redo(calls, isNoScript, func(again []scriptCall) {
		for _, c := range again {
			c.args[0], c.args[1] = cmdEval, c.s.src
		}
		r.pipeWait(ctx, node, again, n, waitMs, how == asked)
		for _, c := range again {
			c.args[0], c.args[1] = cmdEvalSha, c.s.hash
		}
	})
	if cc, ok := r.client.(*redis.ClusterClient); ok && how == followRedirect {
		redo(calls, isMoved, func(moved []scriptCall) {
			// ForEachMaster reads the map first, at once, where
			// ReloadState only asks for it to be read.
			_ = cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error { return nil })
			r.execByNode(ctx, moved, writes, redirected)
		})
		redo(calls, isAsk, func(asks []scriptCall) {
			r.execAsked(ctx, cc, asks, writes)
		})
	}
	for _, c := range calls {
		if c.err != nil {
			r.replicas.failed(node)
			break
		}
	}
}

// redo runs do on those of calls whose error pick picks, and copies their
// replies back.
func redo(calls []scriptCall, pick func(error) bool, do func([]scriptCall)) {
	var again []scriptCall
	var at []int
	for i, c := range calls {
		if c.err != nil && pick(c.err) {
			again, at = append(again, c), append(at, i)
		}
	}
	if len(again) == 0 {
		return
	}
	do(again)
	for j, i := range at {
		calls[i].reply, calls[i].err = again[j].reply, again[j].err
	}
}

// isMoved reports whether err is a Cluster node's MOVED reply.
func isMoved(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "MOVED ")
}

// isAsk reports whether err is a Cluster node's ASK reply.
func isAsk(err error) bool {
	_, ok := askedNode(err)
	return ok
}

// askedNode returns the address an ASK reply names ("ASK slot host:port").
func askedNode(err error) (string, bool) {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return "", false
	}
	f := strings.Fields(rerr.Error())
	if len(f) != 3 || f[0] != "ASK" {
		return "", false
	}
	return f[2], true
}

// execAsked sends calls answered ASK to the masters the replies named, as
// execOn does, each call after ASKING. A named node that is no master in
// the client's map (one that serves no slot yet) leaves its calls with
// the ASK reply, an error.
func (r *Limiter) execAsked(ctx context.Context, cc *redis.ClusterClient, calls []scriptCall, writes bool) {
	masters := map[string]*redis.Client{}
	var mu sync.Mutex
	_ = cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		mu.Lock()
		masters[m.Options().Addr] = m
		mu.Unlock()
		return nil
	})
	byNode := map[*redis.Client][]int{}
	for i, c := range calls {
		addr, _ := askedNode(c.err)
		if m := masters[addr]; m != nil {
			byNode[m] = append(byNode[m], i)
		}
	}
	for node, at := range byNode {
		group := make([]scriptCall, len(at))
		for j, i := range at {
			group[j] = calls[i]
		}
		r.execOn(ctx, node, group, writes, asked)
		for j, i := range at {
			calls[i] = group[j]
		}
	}
}

// execByNode runs calls (but those without a command) through the
// limiter's client as execOn does: one pipeline per node that serves
// them, the nodes at once.
func (r *Limiter) execByNode(ctx context.Context, calls []scriptCall, writes bool, how redirect) {
	type group struct {
		at    []int
		calls []scriptCall
	}
	byNode := map[*redis.Client]*group{}
	for i, c := range calls {
		if c.args == nil {
			continue
		}
		node, err := decidingNode(ctx, r.client, firstKey(c.args))
		if err != nil {
			calls[i].err = err
			continue
		}
		g := byNode[node]
		if g == nil {
			g = &group{}
			byNode[node] = g
		}
		g.at, g.calls = append(g.at, i), append(g.calls, c)
	}
	var wg sync.WaitGroup
	for node, g := range byNode {
		wg.Go(func() { r.execOn(ctx, node, g.calls, writes, how) })
	}
	wg.Wait()
	for _, g := range byNode {
		for j, i := range g.at {
			calls[i] = g.calls[j]
		}
	}
}

// pipeWait sends calls, each after ASKING when asking says so, then WAIT
// n waitMs unless n is 0, in one pipeline on node, and fills the calls'
// replies.
func (r *Limiter) pipeWait(ctx context.Context, node *redis.Client, calls []scriptCall, n, waitMs int64, asking bool) {
	pipe := node.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		if asking {
			pipe.Do(ctx, "asking")
		}
		cmds[i] = pipe.Do(ctx, c.args...)
	}
	var wait *redis.Cmd
	if n > 0 {
		wait = pipe.Do(ctx, "wait", n, waitMs)
	}
	_, _ = pipe.Exec(ctx)
	var short error
	if wait != nil {
		switch acked, err := wait.Int64(); {
		case err != nil:
			short = err
		case acked < n:
			short = errNotReplicated(acked, n, "acknowledged")
		}
	}
	for i := range calls {
		calls[i].reply, calls[i].err = cmds[i].Text()
		if calls[i].err == nil {
			calls[i].err = short
		}
	}
}
