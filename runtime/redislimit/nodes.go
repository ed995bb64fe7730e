package redislimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// On a Redis Cluster or a Ring, the batcher runs one lane per node: the
// calls whose keys one node serves queue for that node's round trips, so a
// slow node holds back its own calls alone, and the calls a lane batches
// go in one script call (see batcher.fly). Until the client knows its
// nodes, and for a call whose node it cannot name, the first lane batches
// calls as a pipeline of one script call each, which the client splits by
// node.

// laneKind says how a lane sends a batch.
type laneKind uint8

const (
	// laneServer: one script call, every key declared (a single server,
	// or one shard of a Ring, which is a plain server).
	laneServer laneKind = iota
	// lanePipeline: one script call per call, each with its own keys
	// declared, pipelined.
	lanePipeline
	// laneNode: one node of a Cluster: one script call, spread over the
	// node's slots (see evalSpread).
	laneNode
)

// lanes are the batchers of a Cluster's or a Ring's nodes.
type lanes struct {
	lim *Limiter
	// nodeOf names the client of the node that serves key from the
	// client's own map, without a round trip.
	nodeOf func(key string) (*redis.Client, error)
	kind   laneKind
	// known says the client has its map of nodes. A ClusterClient loads
	// it on first use, and naming a node before that would load it on the
	// caller's goroutine, unbounded by the caller's wait.
	known atomic.Bool
	// byNode holds each node's batcher (*redis.Client to *batcher): one
	// per node the client ever named, a few.
	byNode sync.Map
	// refused says a node refused a spread batch: the lanes then send
	// pipelines (see evalSpread).
	refused atomic.Bool
}

// newLanes returns the lanes of c, or nil when c is a single server.
func newLanes(lim *Limiter, c redis.UniversalClient) *lanes {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return &lanes{lim: lim, kind: laneNode, nodeOf: func(key string) (*redis.Client, error) {
			// Not the caller's context: the map is known (see known),
			// and nothing else in MasterForKey reads it.
			return c.MasterForKey(context.Background(), key)
		}}
	case *redis.Ring:
		l := &lanes{lim: lim, kind: laneServer, nodeOf: c.GetShardClientForKey}
		l.known.Store(true)
		return l
	}
	return nil
}

// of returns the batcher for a call whose keys include key.
func (l *lanes) of(key string) *batcher {
	if !l.known.Load() {
		return l.lim.batch
	}
	node, err := l.nodeOf(key)
	if err != nil || node == nil {
		return l.lim.batch
	}
	if b, ok := l.byNode.Load(node); ok {
		return b.(*batcher)
	}
	b, _ := l.byNode.LoadOrStore(node, newBatcher(l.lim, l.kind))
	return b.(*batcher)
}

// spanned returns the batcher of the Cluster node that serves every slot
// of groups, the requests of d by slot, or nil when there is none, or
// spread batches are off.
func (l *lanes) spanned(d *resolvedCall, groups [][]int) *batcher {
	if l == nil || l.kind != laneNode || l.refused.Load() {
		return nil
	}
	b := l.of(d.asks[groups[0][0]].key)
	if b.kind != laneNode {
		return nil
	}
	for _, g := range groups[1:] {
		if l.of(d.asks[g[0]].key) != b {
			return nil
		}
	}
	return b
}

// errSpans ends a call over several slots that its node's batch left
// undecided (see evalSpread): Limiter.run then decides it slot by slot.
var errSpans = errors.New("ratelimit: a call over several slots left undecided")

// trip wakes every waiting call of every lane: the breaker opened.
func (l *lanes) trip() {
	l.byNode.Range(func(_, b any) bool {
		b.(*batcher).trip()
		return true
	})
}

// tripBatches wakes every call waiting in a batcher: the breaker opened.
func (r *Limiter) tripBatches() {
	r.batch.trip()
	if r.lanes != nil {
		r.lanes.trip()
	}
}
