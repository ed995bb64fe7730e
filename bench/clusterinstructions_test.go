package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime/redislimit"
)

// BenchmarkClusterInstructions is BenchmarkCluster's 64-caller rows with
// Redis's work counted in instructions rather than time: every
// redis-server runs under valgrind's callgrind, and redis-instr/op is the
// instructions the masters ran while the decisions were made, summed over
// them, per decision. On a small machine a Cluster's six servers and the
// callers share a few cores, and the time Redis reports for a script grows
// with the waits for a core (redis_rate's own time per decision doubles on
// two cores, with the same scripts on both topologies); instructions do
// not. With CALLGRIND_DIR set, the servers' callgrind outputs stay in that
// directory, for callgrind_annotate. Give it a fixed count, as in
//
//	go test -run '^$' -bench ClusterInstructions -benchtime 8000x
func BenchmarkClusterInstructions(b *testing.B) {
	needCallgrind(b)
	dir := b.TempDir()
	if d := os.Getenv("CALLGRIND_DIR"); d != "" {
		dir = d
	}
	// %p names each server's output by its PID: the options apply to
	// every server of the Cluster.
	under := redistest.Under("valgrind", "--tool=callgrind", "--callgrind-out-file="+filepath.Join(dir, "callgrind.out.%p"))
	single := redistest.StartServer(b, under)
	replicate(b, single, redistest.StartServer(b))
	cluster := redistest.StartCluster(b, under)
	topologies := []struct {
		name    string
		client  redis.UniversalClient
		masters func() []*redistest.Server
	}{
		{"server", newClient(single.Addr()), func() []*redistest.Server { return []*redistest.Server{single} }},
		{"cluster3", redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()}), cluster.Masters},
	}
	for _, topo := range topologies {
		b.Cleanup(func() { _ = topo.client.Close() })
	}
	contenders := clusterContenders(redislimit.WithTimeout(time.Minute))
	ks := keySet{spec: spec{window: time.Second, max: 100}, keys: manyKeys(10000)}
	for _, topo := range topologies {
		for _, ct := range contenders {
			b.Run(fmt.Sprintf("callers=64/topology=%s/lib=%s", topo.name, ct.name), func(b *testing.B) {
				decide, err := ct.build(topo.client, ks.spec)
				if err != nil {
					b.Fatal(err)
				}
				// Load the scripts on every master and warm the
				// connections, uncounted.
				warm(b, decide, ks.keys, 600)
				masters := topo.masters()
				for _, m := range masters {
					resetServerStats(b, m.Client(b))
					callgrind(b, "-z", m.PID())
				}
				runParallel(b, decide, ks.keys, 64)
				b.StopTimer()
				var instr int64
				var calls float64
				for _, m := range masters {
					instr += dumpOf(b, dir, m.PID())
					_, n := scriptStats(b, m.Client(b))
					calls += n
				}
				b.ReportMetric(float64(instr)/float64(b.N), "redis-instr/op")
				b.ReportMetric(calls/float64(b.N), "redis-calls/op")
			})
		}
	}
}

// dumpOf dumps the counts of the callgrind process pid, whose output file
// is dir's callgrind.out.<pid>, and returns their instructions. Each dump
// is a file of its own (callgrind.out.<pid>.<n>): the one it adds is read.
func dumpOf(b *testing.B, dir string, pid int) int64 {
	b.Helper()
	pattern := filepath.Join(dir, fmt.Sprintf("callgrind.out.%d.*", pid))
	before, _ := filepath.Glob(pattern)
	callgrind(b, "-d", pid)
	after, err := filepath.Glob(pattern)
	fresh := slices.DeleteFunc(after, func(f string) bool { return slices.Contains(before, f) })
	if err != nil || len(fresh) != 1 {
		b.Fatalf("want one new callgrind dump matching %s, found %v (%v)", pattern, fresh, err)
	}
	return summary(b, fresh[0])
}
