package redislimit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// CheckReport is what Limiter.Check learnt besides whether the limiter can
// decide.
type CheckReport struct {
	// Versions holds the version of each server that answered (every
	// primary of a Redis Cluster, every shard of a Ring), by address; ""
	// for one that would not say.
	Versions map[string]string
	// Eviction is nil when no server may evict the limiter's counts, and
	// otherwise wraps ErrEvictionRisk: a server's maxmemory-policy, or
	// that the policy cannot be read (CONFIG GET refused).
	Eviction error
}

// Check asks Redis whether the limiter can decide, for a service's
// start-up or readiness probe. On every server the limiter uses (every
// primary of a Redis Cluster, every shard of a Ring), it runs each
// decision script once (with WithLeases, the lease script too; and a
// concurrency limit's, taking a permit and releasing it) and a
// script that calls every command those scripts use, on keys of its own (the limit "ratelimit.check" on keys
// "check-N", under the limiter's prefix) that no limit reads, and once the
// instance beat; it reads each server's version and the eviction settings.
// With WithDurable, each of those scripts waits for the server's replicas
// as a decision does, so a refused WAIT or INFO, or a replica missing
// (ErrNotReplicated), is found too.
//
// The error is nil when everything ran. Otherwise it joins one error per
// problem: a refusal matching ErrPermission that names the missing command
// or key pattern (logged as a decision's refusal is), or Redis failing to
// answer. The eviction finding is in the report, not the error, as the
// limiter decides all the same. The beat's count is kept, so that FailLocal
// knows each limit's share (see WithInstances) from then on. ctx bounds the
// whole check, about ten round trips per server.
func (r *Limiter) Check(ctx context.Context) (CheckReport, error) {
	rep := CheckReport{Versions: map[string]string{}}
	nodes, err := r.checkNodes(ctx)
	if err != nil {
		return rep, fmt.Errorf("ratelimit: check: cannot list the servers: %w", r.refused(err, slog.String("in", "check")))
	}
	var errs []error
	seen := map[string]bool{}
	add := func(node string, err error) {
		if err == nil {
			return
		}
		err = r.refused(err, slog.String("in", "check"), slog.String("server", node))
		id := err.Error()
		if ref := refusalOf(err, r.cfg.prefix); ref != nil {
			id = ref.missing
		}
		if seen[node+"\x00"+id] {
			return
		}
		seen[node+"\x00"+id] = true
		errs = append(errs, fmt.Errorf("%s: %w", node, err))
	}
	connFailed := false
	for _, n := range nodes {
		errs := r.checkScripts(ctx, n.key)
		if len(errs) == 1 && !isRedisError(errs[0]) {
			// No connection: a TLS handshake that the server refused
			// shows as one only to a client that reads before writing.
			connFailed = true
			if refusalOf(errs[0], r.cfg.prefix) == nil {
				if ref := tlsRefused(ctx, n.client); ref != nil {
					errs[0] = ref
				}
			}
		} else {
			rep.Versions[n.addr] = serverVersion(ctx, n.client)
		}
		for _, err := range errs {
			add(n.addr, err)
		}
	}
	if !connFailed {
		n, beat := instanceScript.Run(ctx, r.client, []string{r.peers.key}, r.peers.id, instanceTTL.Milliseconds()).Int64()
		if beat == nil {
			// A service that checks at start-up knows its share before
			// Redis can first fail it.
			r.peers.n.Store(n)
		}
		add("instance beat", beat)
	}
	if finding, ok := evictionFinding(ctx, r.client); ok {
		rep.Eviction = finding
	}
	return rep, errors.Join(errs...)
}

// checkNode is one server that Check asks, with a key of the check's own
// that the limiter's client sends to that server.
type checkNode struct {
	addr string
	// client is the server's own client: r.client itself, but for a
	// cluster's or a Ring's node.
	client redis.UniversalClient
	key    string
}

// checkNodes returns the servers the limiter uses, each with a key that
// lands on it.
func (r *Limiter) checkNodes(ctx context.Context) ([]checkNode, error) {
	var (
		clients []*redis.Client
		forKey  func(string) (*redis.Client, error)
	)
	switch c := r.client.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		err := c.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			clients = append(clients, node)
			return nil
		})
		if err != nil {
			return nil, err
		}
		forKey = func(k string) (*redis.Client, error) { return c.MasterForKey(ctx, k) }
	case *redis.Ring:
		clients = c.GetShardClients()
		forKey = c.GetShardClientForKey
	case *redis.Client:
		return []checkNode{{addr: c.Options().Addr, client: c, key: checkKey(0)}}, nil
	default:
		return []checkNode{{addr: fmt.Sprintf("the %T", c), client: c, key: checkKey(0)}}, nil
	}
	nodes := make([]checkNode, 0, len(clients))
	for _, c := range clients {
		nodes = append(nodes, checkNode{addr: c.Options().Addr, client: c})
	}
	slices.SortFunc(nodes, func(a, b checkNode) int { return strings.Compare(a.addr, b.addr) })
	left := len(nodes)
	// Keys fall on slots evenly: a few dozen tries find one per server.
	for i := 0; left > 0 && i < 1<<16; i++ {
		key := checkKey(i)
		c, err := forKey(r.storageKey(checkLimit(runtime.SlidingLog), key))
		if err != nil {
			return nil, err
		}
		for j := range nodes {
			if nodes[j].key == "" && nodes[j].addr == c.Options().Addr {
				nodes[j].key = key
				left--
			}
		}
	}
	for _, n := range nodes {
		if n.key == "" {
			return nil, fmt.Errorf("no key of the check lands on %s", n.addr)
		}
	}
	return nodes, nil
}

// checkKey is Check's i-th key.
func checkKey(i int) string { return "check-" + strconv.Itoa(i) }

// checkLimit is the limit Check decides with algorithm a: its own name, and
// room for far more checks per second than a probe makes.
func checkLimit(a runtime.Algorithm) runtime.Limit {
	return runtime.Limit{Name: "ratelimit.check", Algorithm: a, Window: time.Second, Max: 1000}
}

// checkScripts runs, on key, the probe of every command and then each
// decision script, and returns their errors.
func (r *Limiter) checkScripts(ctx context.Context, key string) []error {
	var errs []error
	probe := r.storageKey(checkLimit(runtime.SlidingLog), key)
	// The probe's keys share the decision keys' hash tag, so its server.
	res, err := r.client.Do(ctx, "eval", probeScript, 3, probe+":z", probe+":h", probe+":s").StringSlice()
	if err != nil && !isRedisError(err) {
		// No reply: the scripts would fare no better.
		return []error{err}
	}
	errs = append(errs, err)
	for _, line := range res {
		cmd, reply, _ := strings.Cut(line, "\t")
		if ref := readRefusal(reply, r.cfg.prefix, cmd, refusedReply(reply)); ref != nil {
			errs = append(errs, ref)
		}
	}

	algos := make([]runtime.Algorithm, 0, len(algoSpecs))
	for a := range algoSpecs {
		algos = append(algos, a)
	}
	slices.Sort(algos)
	reqs := make([]runtime.Request, len(algos), len(algos)+1)
	all := make([]int, len(algos)+1)
	for i, a := range algos {
		reqs[i] = runtime.Request{Limit: checkLimit(a), Key: key}
		all[i] = i
	}
	// A calendar limit's script (lua/calendar_window.lua), in UTC, which
	// needs no time zone database.
	cal := checkLimit(runtime.FixedWindow)
	cal.Window, cal.Calendar = 0, runtime.Calendar{Period: runtime.Day}
	reqs = append(reqs, runtime.Request{Limit: cal, Key: key})
	all[len(algos)] = len(algos)
	d := resolvedCall{now: -1, asks: r.resolve(nil, reqs), vs: make([]verdict, len(reqs))}
	if err := r.resolveCalendars(d.asks, reqs); err != nil {
		return append(errs, err)
	}
	if r.cfg.clock != nil {
		d.now = r.cfg.clock().UnixMicro()
	}
	groups := make([][]int, 0, len(reqs)+1)
	for i := range reqs {
		groups = append(groups, all[i:i+1])
	}
	groups = append(groups, all) // the script of mixed algorithms
	for _, g := range groups {
		s := scriptOf(&d, g)
		res, err := r.runScript(ctx, r.client, s, r.callArgs(s, modeDecide, &d, g, ""), nil, true)
		if err == nil {
			_, _, err = readCall(res, &d, g)
		}
		errs = append(errs, err)
	}
	errs = append(errs, r.checkPermit(ctx, key, d.now))
	if r.leases != nil {
		// The lease script, releasing nothing and asking for nothing.
		var a ask
		resolveLimit(&a, &runtime.Request{Limit: checkLimit(runtime.GCRA)})
		_, err := r.lease(ctx, &leaseAsk{key: r.storageKey(checkLimit(runtime.GCRA), key), code: a.code, window: a.window,
			max: a.max, burst: a.burst, now: d.now, life: 1000, id: 1})
		errs = append(errs, err)
	}
	return errs
}

// checkPermit takes a permit of Check's concurrency limit on key, at now
// (see resolvedCall), and releases it, in two script calls: a concurrency
// limit is in no list of runtime.Algorithms.
func (r *Limiter) checkPermit(ctx context.Context, key string, now int64) error {
	s, idx := codeScripts[codeConcurrency], firstN(1)
	reqs := []runtime.Request{{Limit: checkLimit(runtime.Concurrency), Key: key}}
	d := resolvedCall{now: now, asks: r.resolve(nil, reqs), vs: make([]verdict, 1), receipts: make([]int64, 1)}
	res, err := r.runScript(ctx, r.client, s, r.callArgs(s, modeDecide, &d, idx, ""), nil, true)
	if err == nil {
		_, _, err = readCall(res, &d, idx)
	}
	if err != nil {
		return err
	}
	d.op, d.used = opSettle, []int64{1}
	_, err = r.runScript(ctx, r.client, s, r.callArgs(s, modeSettle, &d, idx, r.settleMarker(d.asks[0].key)), nil, true)
	return err
}

// probeScript calls each command that the limiter's scripts call, and the
// PTTL of its check of Redis, on its three keys (a sorted set, a hash and
// a string), and returns "COMMAND\terror" for each that failed. Commands
// that a script cannot run fail with the reason; others succeed or fail
// for the keys' data, which it leaves with a TTL.
var probeScript = func() string {
	var b strings.Builder
	b.WriteString("local z, h, s = KEYS[1], KEYS[2], KEYS[3]\nlocal out = {}\n")
	b.WriteString("local function try(...)\n  local r = redis.pcall(...)\n")
	b.WriteString("  if type(r) == 'table' and r.err then out[#out + 1] = (...) .. '\\t' .. r.err end\nend\n")
	for _, c := range probeCalls {
		b.WriteString("try('" + c[0] + "'")
		for _, a := range c[1:] {
			switch a {
			case "z", "h", "s":
				b.WriteString(", " + a)
			default:
				b.WriteString(", '" + a + "'")
			}
		}
		b.WriteString(")\n")
	}
	b.WriteString("return out\n")
	return b.String()
}()

// probeCalls are the calls of probeScript: each command with arguments of
// the number it takes, z, h and s standing for its keys. A test checks
// that every command the scripts call is here.
var probeCalls = [][]string{
	{"TIME"},
	{"ZADD", "z", "0", "m"},
	{"ZCARD", "z"},
	{"ZREMRANGEBYSCORE", "z", "-inf", "-inf"},
	{"ZSCORE", "z", "m"},
	{"ZCOUNT", "z", "-inf", "-inf"},
	{"ZRANGE", "z", "-1", "-1", "WITHSCORES"},
	{"ZREM", "z", "n"},
	{"HSET", "h", "f", "0"},
	{"HINCRBY", "h", "f", "0"},
	{"HGET", "h", "f"},
	{"HMGET", "h", "f"},
	{"HGETALL", "h"},
	{"HEXISTS", "h", "f"},
	{"HDEL", "h", "g"},
	{"SET", "s", "0", "PX", "1000"},
	{"GET", "s"},
	{"GETRANGE", "s", "0", "0"},
	{"SETRANGE", "s", "0", "0"},
	{"PTTL", "s"},
	{"PEXPIRE", "z", "1000"},
	{"PEXPIRE", "h", "1000"},
	{"DEL", "s"},
}

// tlsDiagnosisWait bounds how long tlsRefused waits for the server's
// verdict on the client's certificate.
const tlsDiagnosisWait = time.Second

// tlsRefused tells whether c's server refuses c's TLS client certificate,
// or c does not trust the server's, by a handshake of its own (with c's
// TLSConfig and address, not its Dialer) after which it reads before
// writing anything: in TLS 1.3 the server judges the client's certificate
// after the client's handshake ends, and a client that writes its first
// command meanwhile may see the connection reset instead of the server's
// alert. nil when c has no TLS, or the server says nothing within
// tlsDiagnosisWait.
func tlsRefused(ctx context.Context, c redis.UniversalClient) *refusalError {
	client, ok := c.(*redis.Client)
	if !ok || client.Options().TLSConfig == nil {
		return nil
	}
	opt := client.Options()
	ctx, cancel := context.WithTimeout(ctx, tlsDiagnosisWait)
	defer cancel()
	cfg := opt.TLSConfig.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(opt.Addr)
	}
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, opt.Network, opt.Addr)
	if err != nil {
		return tlsRefusal(err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	_, err = conn.Read(make([]byte, 1))
	return tlsRefusal(err)
}

// serverVersion returns the version c's server gives in HELLO (Redis 6 and
// newer, allowed to every user) or INFO, or "".
func serverVersion(ctx context.Context, c doer) string {
	if res, err := c.Do(ctx, "hello").Result(); err == nil {
		switch m := res.(type) {
		case map[any]any:
			if v, ok := m["version"].(string); ok {
				return v
			}
		case []any:
			for i := 0; i+1 < len(m); i += 2 {
				if k, _ := m[i].(string); k == "version" {
					v, _ := m[i+1].(string)
					return v
				}
			}
		}
	}
	info, err := c.Do(ctx, "info", "server").Text()
	if err != nil {
		return ""
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return ""
}
