package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// BenchmarkCluster runs ratelimitgen's two algorithms and redis_rate on one
// redis-server and on a Redis Cluster of three masters, each server with a
// replica, from one process in one run: 10,000 keys, Max 100 per second
// each (a limit that never binds at these rates), at 64, 256 and 1,024
// callers. Beside ns/op it reports, summed over every master,
// redis-µs/op (the servers' time in scripts per decision) and
// redis-calls/op (script calls per decision). ratelimitgen's rows stop
// on the first decision Redis did not make (see ratelimitgen), and every
// row fails if a call errs. cmd/clustertable runs it and prints the
// table:
//
//	go run ./cmd/clustertable
func BenchmarkCluster(b *testing.B) {
	// One server with a replica, as each of the Cluster's masters has.
	single := redistest.StartServer(b)
	replicate(b, single, redistest.StartServer(b))
	cluster := redistest.StartCluster(b)
	topologies := []struct {
		name    string
		client  redis.UniversalClient
		masters func() []*redis.Client
	}{
		{"server", newClient(single.Addr()), func() []*redis.Client { return []*redis.Client{single.Client(b)} }},
		{"cluster3", redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()}), func() []*redis.Client {
			var cs []*redis.Client
			for _, m := range cluster.Masters() {
				cs = append(cs, m.Client(b))
			}
			return cs
		}},
	}
	for _, topo := range topologies {
		b.Cleanup(func() { _ = topo.client.Close() })
	}
	ks := keySet{spec: spec{window: time.Second, max: 100}, keys: manyKeys(10000)}
	for _, callers := range []int{64, 256, 1024} {
		for _, topo := range topologies {
			for _, ct := range clusterContenders() {
				b.Run(fmt.Sprintf("callers=%d/topology=%s/lib=%s", callers, topo.name, ct.name), func(b *testing.B) {
					masters := topo.masters()
					for _, m := range masters {
						flush(b, m)
					}
					decide, err := ct.build(topo.client, ks.spec)
					if err != nil {
						b.Fatal(err)
					}
					for _, m := range masters {
						resetServerStats(b, m)
					}
					runParallel(b, decide, ks.keys, callers)
					var micros, calls float64
					for _, m := range masters {
						us, n := scriptStats(b, m)
						micros, calls = micros+us, calls+n
					}
					b.ReportMetric(micros/float64(b.N), "redis-µs/op")
					b.ReportMetric(calls/float64(b.N), "redis-calls/op")
				})
			}
		}
	}
}

// replicate makes replica a replica of master, and returns once its link
// is up.
func replicate(tb testing.TB, master, replica *redistest.Server) {
	tb.Helper()
	host, port, _ := strings.Cut(master.Addr(), ":")
	c := replica.Client(tb)
	if err := c.ReplicaOf(context.Background(), host, port).Err(); err != nil {
		tb.Fatalf("REPLICAOF: %v", err)
	}
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Since(start) > 30*time.Second {
			tb.Fatalf("replica %s never linked to %s: %v\n%s", replica.Addr(), master.Addr(), err, info)
		}
	}
}

// clusterContender is a row of BenchmarkCluster: a library's decision
// function on any go-redis client.
type clusterContender struct {
	name  string
	build func(c redis.UniversalClient, s spec) (decideFunc, error)
}

// clusterContenders returns BenchmarkCluster's rows, ratelimitgen's with
// extra options.
func clusterContenders(extra ...redislimit.Option) []clusterContender {
	return []clusterContender{
		{"ratelimitgen-gcra", func(c redis.UniversalClient, s spec) (decideFunc, error) {
			return ratelimitgenOn(c, runtime.GCRA, s, nil, false, extra...)
		}},
		{"ratelimitgen-sliding-log", func(c redis.UniversalClient, s spec) (decideFunc, error) {
			return ratelimitgenOn(c, runtime.SlidingLog, s, nil, false, extra...)
		}},
		{"redis_rate", redisRateOn},
	}
}

// TestClusterContenders checks BenchmarkCluster's rows on a Cluster
// without timing: each admits exactly Max on a key from 32 goroutines, and
// decides keys on every master.
func TestClusterContenders(t *testing.T) {
	cluster := redistest.StartCluster(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { _ = client.Close() })
	s := spec{window: time.Hour, max: 10}
	for _, ct := range clusterContenders() {
		decide, err := ct.build(client, s)
		if err != nil {
			t.Fatal(err)
		}
		keys := manyKeys(30)
		admitted := make(chan int, 32)
		for range 32 {
			go func() {
				n := 0
				for _, k := range keys {
					ok, err := decide(context.Background(), ct.name+k)
					if err != nil {
						t.Error(err)
						break
					}
					if ok {
						n++
					}
				}
				admitted <- n
			}()
		}
		total := 0
		for range 32 {
			total += <-admitted
		}
		if want := len(keys) * s.max; total != want {
			t.Errorf("%s admitted %d calls over %d keys of Max %d, want %d", ct.name, total, len(keys), s.max, want)
		}
	}
}
