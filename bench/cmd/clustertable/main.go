// Command clustertable runs bench's BenchmarkCluster (ratelimitgen's two
// algorithms and go-redis/redis_rate, on one redis-server and on a
// three-master Redis Cluster, in one run) three times, and prints a
// markdown table of medians: decisions/s, the servers' script time (µs)
// and script calls per decision, and the ratios the comparison is about:
// the Cluster's against one server's, and ours against redis_rate's on the
// Cluster. Run it from the bench directory, with no arguments:
//
//	go run ./cmd/clustertable    # about 4 minutes; raw output in clustertable.txt
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const out = "clustertable.txt"

func main() {
	raw, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertable:", err)
		os.Exit(1)
	}
	rows, err := parse(bytes.NewReader(raw))
	if err == nil {
		err = render(os.Stdout, rows)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clustertable:", err)
		os.Exit(1)
	}
}

// run runs the benchmark, copying its output to the terminal and to out.
func run() ([]byte, error) {
	f, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^BenchmarkCluster$", "-benchtime", "3s", "-count", "3", ".")
	cmd.Stdout = io.MultiWriter(&buf, f, os.Stderr)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test: %w (output in %s)", err, out)
	}
	return buf.Bytes(), nil
}

// row is one benchmark's samples, by unit ("ns/op", "redis-µs/op", ...).
type row map[string][]float64

// key names a row: callers, topology and library.
type key struct {
	callers       int
	topology, lib string
}

var line = regexp.MustCompile(`^BenchmarkCluster/callers=(\d+)/topology=(\w+)/lib=([\w_-]+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parse reads go test's benchmark lines.
func parse(r io.Reader) (map[key]row, error) {
	rows := map[key]row{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		m := line.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		callers, _ := strconv.Atoi(m[1])
		k := key{callers, m[2], m[3]}
		if rows[k] == nil {
			rows[k] = row{}
		}
		f := strings.Fields(m[4])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", s.Text(), err)
			}
			rows[k][f[i+1]] = append(rows[k][f[i+1]], v)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no BenchmarkCluster lines in the output")
	}
	return rows, s.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// rate is a row's median decisions per second.
func (r row) rate() float64 {
	if ns := median(r["ns/op"]); ns > 0 {
		return 1e9 / ns
	}
	return 0
}

func render(w io.Writer, rows map[key]row) error {
	var keys []key
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.callers != b.callers {
			return a.callers - b.callers
		}
		return strings.Compare(a.lib, b.lib)
	})
	fmt.Fprintln(w, "| callers | library | decisions/s, one server | decisions/s, Cluster | Cluster ÷ server | ÷ redis_rate on the Cluster | Redis µs/decision, server → Cluster (ratio) | script calls/decision, server → Cluster (ratio) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		if k.topology != "server" {
			continue
		}
		s, c := rows[k], rows[key{k.callers, "cluster3", k.lib}]
		base := rows[key{k.callers, "cluster3", "redis_rate"}]
		if c == nil || base == nil {
			return fmt.Errorf("callers=%d lib=%s: a row is missing", k.callers, k.lib)
		}
		us, cus := median(s["redis-µs/op"]), median(c["redis-µs/op"])
		calls, ccalls := median(s["redis-calls/op"]), median(c["redis-calls/op"])
		fmt.Fprintf(w, "| %d | %s | %.0f | %.0f | %.2f | %.2f | %.2f → %.2f (%.2f×) | %.3f → %.3f (%.2f×) |\n",
			k.callers, k.lib, s.rate(), c.rate(), c.rate()/s.rate(), c.rate()/base.rate(),
			us, cus, cus/us, calls, ccalls, ccalls/calls)
	}
	return nil
}
