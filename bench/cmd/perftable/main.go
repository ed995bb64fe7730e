// Command perftable reproduces the Performance table of the repository's
// docs/performance.md: it runs the table's rows of bench's BenchmarkAllow against one
// real redis-server (started by the benchmark), count times, and prints a
// markdown table of medians and of ratios to go-redis/redis_rate and to the
// ceiling of the row's algorithm (bench/ceiling.go), measured in the same
// run.
//
// Run it from the bench directory:
//
//	go run ./cmd/perftable                 # -count 5, about 8 minutes on 2 cores
//	go run ./cmd/perftable -in perftable.txt   # the table again from saved output
//
// With -inprocess it makes bench/README.md's In process table instead: every
// row of BenchmarkInProcess and BenchmarkInProcessIdleKey (no Redis), ns/op
// against sethvargo/go-limiter's memorystore on 4,096 keys and on new keys,
// and against a single x/time/rate limiter on the hot key:
//
//	go run ./cmd/perftable -inprocess      # -count 10 -benchtime 0.5s, about 7 minutes on 2 cores
//
// The rows are every contender but the ContextTimeoutEnabled variant (the
// ceiling's two algorithms included), at 1,
// 64 and 256 callers on 10,000 keys and at 64 callers on one key under
// 100% denial. The raw `go test` output goes to -o (default perftable.txt)
// so that benchstat can read it too; the table goes to standard output.
//
// Each repetition is one pass over every row, the libraries of a setting
// one after another (go test -count would instead repeat each row count
// times before the next). Ratios are medians of the ratios within each
// pass (a row against redis_rate's row of the same setting), with their
// range in parentheses: on a shared machine the load drifts, and the pass
// pairs rows measured seconds apart.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// baseline is the library every ratio of the Performance table is taken
// against.
const baseline = "redis_rate"

// table is what one kind of table runs and compares against.
type table struct {
	// bench is go test's -bench pattern; prefixes are the benchmarks'
	// names up to the first sub-benchmark, slash included.
	bench    string
	prefixes []string
	// flags are more arguments for the test binary.
	flags []string
	// rows is how many rows one pass runs, for the progress report only.
	rows int
	// baseline names the library a setting's ratios are taken against.
	baseline func(setting) string
	render   func(io.Writer, *results, []string) error
}

var (
	perfTable = table{
		bench: "^BenchmarkAllow$", prefixes: []string{"BenchmarkAllow/"}, flags: []string{"-perftable"},
		rows: tableRows, baseline: func(setting) string { return baseline }, render: render,
	}
	inProcessTable = table{
		bench: "^BenchmarkInProcess", prefixes: []string{"BenchmarkInProcess/", "BenchmarkInProcessIdleKey/"},
		rows: 37, baseline: inProcessBaseline, render: renderInProcess,
	}
)

func main() {
	count := flag.Int("count", 5, "repetitions of every row (go test -count)")
	benchtime := flag.String("benchtime", "1s", "time per row and repetition (go test -benchtime)")
	out := flag.String("o", "perftable.txt", "file for the raw go test output")
	in := flag.String("in", "", "print the table from this saved go test output instead of running")
	inProcess := flag.Bool("inprocess", false, "the In process table of bench/README.md (defaults -count 10 -benchtime 0.5s -o inprocess.txt)")
	flag.Parse()
	tab := perfTable
	if *inProcess {
		tab = inProcessTable
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["count"] {
			*count = 10
		}
		if !set["benchtime"] {
			*benchtime = "0.5s"
		}
		if !set["o"] {
			*out = "inprocess.txt"
		}
	}

	var raw []byte
	var notes []string
	if *in != "" {
		var err error
		if raw, err = os.ReadFile(*in); err != nil {
			fatal(err)
		}
	} else {
		var err error
		raw, notes, err = run(tab, *count, *benchtime, *out)
		if err != nil {
			fatal(err)
		}
	}
	res, err := parse(bytes.NewReader(raw), tab.prefixes...)
	if err != nil {
		fatal(err)
	}
	if err := tab.render(os.Stdout, res, notes); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "perftable:", err)
	os.Exit(1)
}

// run builds bench's test binary once and runs the table's benchmarks
// count times, one pass of every row after another, writing their output
// to outFile and progress to stderr. It returns the output and notes on
// the machine.
func run(tab table, count int, benchtime, outFile string) ([]byte, []string, error) {
	dir, err := benchDir()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "perftable")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bench.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, nil, fmt.Errorf("go test -c: %w", err)
	}
	f, err := os.Create(outFile)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	args := append([]string{"-test.run", "^$", "-test.bench", tab.bench, "-test.benchmem",
		"-test.count", "1", "-test.benchtime", benchtime, "-test.timeout", "0"}, tab.flags...)
	fmt.Fprintf(os.Stderr, "perftable: in %s, %d times: go test -c && bench.test %s\n", dir, count, strings.Join(args, " "))
	notes := []string{"load average before: " + loadavg()}
	began := time.Now()
	var buf bytes.Buffer
	rows, total := 0, count*tab.rows
	for pass := range count {
		// One process per pass: go test -count would repeat each row
		// count times in a row, so that drift in the machine's load would
		// fall between a library and the one it is compared with.
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if pass > 0 && isHeader(line) {
				continue
			}
			fmt.Fprintln(&buf, line)
			fmt.Fprintln(f, line)
			if strings.HasPrefix(line, "Benchmark") && strings.Contains(line, "ns/op") {
				rows++
				name, _, _ := strings.Cut(line, " ")
				fmt.Fprintf(os.Stderr, "perftable: %d/%d %s (%s)\n", rows, total, name, time.Since(began).Round(time.Second))
			} else if strings.HasPrefix(line, "---") || strings.Contains(line, "FAIL") {
				fmt.Fprintln(os.Stderr, line)
			}
		}
		if err := cmd.Wait(); err != nil {
			return nil, nil, fmt.Errorf("pass %d: %w (output in %s)", pass+1, err, outFile)
		}
	}
	notes = append(notes, "load average after: "+loadavg(),
		fmt.Sprintf("%d passes of -benchtime %s, %s in all", count, benchtime, time.Since(began).Round(time.Second)))
	if v, err := exec.Command("redis-server", "--version").Output(); err == nil {
		notes = append(notes, strings.TrimSpace(string(v)))
	}
	if v, err := exec.Command("go", "version").Output(); err == nil {
		notes = append(notes, strings.TrimSpace(string(v)))
	}
	return buf.Bytes(), notes, nil
}

// tableRows is how many rows one pass runs (bench's TestTableRows checks
// the benchmark's side); only the progress report uses it.
const tableRows = 36

// isHeader reports whether a line is one of go test's header lines, which
// the passes after the first leave out of the combined output.
func isHeader(line string) bool {
	for _, p := range []string{"goos:", "goarch:", "pkg:", "cpu:", "PASS"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// benchDir returns the bench module's directory, from go env GOMOD.
func benchDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	data, err := os.ReadFile(gomod)
	if err != nil || !bytes.Contains(data, []byte("module github.com/ratelimitgen/ratelimitgen/bench\n")) {
		return "", errors.New("run perftable inside the bench module (cd bench)")
	}
	return filepath.Dir(gomod), nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// setting is one column of conditions: callers and key set.
type setting struct {
	callers int
	keys    string
}

// row is one library in one setting: its metrics per repetition, in the
// order the repetitions ran.
type row struct {
	lib     string
	setting setting
	runs    []map[string]float64
}

// results holds every parsed row, libraries and settings in the order
// they first appeared, and the header lines of go test (cpu etc.).
type results struct {
	libs     []string
	settings []setting
	rows     map[string]map[setting]*row
	header   []string
	procs    string
}

// parse reads go test -bench output: the benchmarks whose names start with
// one of prefixes (BenchmarkAllow/ if none). A benchmark without callers
// or keys in its name (BenchmarkInProcessIdleKey) is a setting of one
// caller on keys "new".
func parse(r io.Reader, prefixes ...string) (*results, error) {
	if len(prefixes) == 0 {
		prefixes = perfTable.prefixes
	}
	res := &results{rows: map[string]map[setting]*row{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "cpu:") || strings.HasPrefix(line, "goos:") || strings.HasPrefix(line, "goarch:") {
			if !slices.Contains(res.header, line) {
				res.header = append(res.header, strings.TrimSpace(line))
			}
			continue
		}
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(line, p) }) {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || (len(fields)-2)%2 != 0 {
			continue
		}
		name := fields[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				res.procs = name[i+1:]
				name = name[:i]
			}
		}
		var lib string
		var s setting
		for _, part := range strings.Split(name, "/")[1:] {
			k, v, _ := strings.Cut(part, "=")
			switch k {
			case "lib":
				lib = v
			case "callers":
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("%s: callers=%q", name, v)
				}
				s.callers = n
			case "keys":
				s.keys = v
			}
		}
		if s == (setting{}) && strings.HasPrefix(name, "BenchmarkInProcessIdleKey/") {
			s = setting{callers: 1, keys: "new"}
		}
		if lib == "" || s.callers == 0 || s.keys == "" {
			return nil, fmt.Errorf("unexpected benchmark name %s", name)
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", name, fields[i], err)
			}
			m[fields[i+1]] = v
		}
		if !slices.Contains(res.libs, lib) {
			res.libs = append(res.libs, lib)
		}
		if !slices.Contains(res.settings, s) {
			res.settings = append(res.settings, s)
		}
		if res.rows[lib] == nil {
			res.rows[lib] = map[setting]*row{}
		}
		rw := res.rows[lib][s]
		if rw == nil {
			rw = &row{lib: lib, setting: s}
			res.rows[lib][s] = rw
		}
		rw.runs = append(rw.runs, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(res.libs) == 0 {
		return nil, fmt.Errorf("no %s results in the output", strings.Join(prefixes, " or "))
	}
	// Settings in the table's order: fewer callers first, denial last.
	slices.SortStableFunc(res.settings, func(a, b setting) int {
		if (a.keys == "denied") != (b.keys == "denied") {
			if a.keys == "denied" {
				return 1
			}
			return -1
		}
		return a.callers - b.callers
	})
	return res, nil
}

// values returns one metric of a row, per repetition (NaN where missing).
func (r *row) values(unit string) []float64 {
	vs := make([]float64, len(r.runs))
	for i, m := range r.runs {
		v, ok := m[unit]
		if !ok {
			v = math.NaN()
		}
		vs[i] = v
	}
	return vs
}

// decisionsPerSec returns 1e9/ns-op per repetition: decisions per second of
// all callers together.
func (r *row) decisionsPerSec() []float64 {
	vs := r.values("ns/op")
	for i, v := range vs {
		vs[i] = 1e9 / v
	}
	return vs
}

func median(vs []float64) float64 {
	s := slices.DeleteFunc(slices.Clone(vs), math.IsNaN)
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pairedRatios divides a by b repetition by repetition.
func pairedRatios(a, b []float64) []float64 {
	n := min(len(a), len(b))
	rs := make([]float64, 0, n)
	for i := range n {
		if !math.IsNaN(a[i]) && !math.IsNaN(b[i]) && b[i] != 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	return rs
}

// ratio formats the median of paired ratios with their range.
func ratio(rs []float64) string {
	if len(rs) == 0 {
		return "–"
	}
	m := median(rs)
	if len(rs) == 1 {
		return times(m)
	}
	return fmt.Sprintf("%s (%s–%s)", times(m), factor(slices.Min(rs)), factor(slices.Max(rs)))
}

func times(v float64) string { return factor(v) + "×" }

// factor formats a ratio with two decimals, none from 100 on, and two
// significant digits below 0.01.
func factor(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 0.01 || v <= 0:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', int(-math.Floor(math.Log10(v)))+1, 64)
}

// sig formats v with about three significant digits and thousands
// separators.
func sig(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v == 0:
		return "0"
	case math.Abs(v) < 0.001:
		return "<0.001"
	case math.Abs(v) >= 1000:
		return thousands(int64(math.Round(v)))
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ceilingOf names the ceiling row (bench/ceiling.go) a library's row is
// compared with: the minimal batched client with the same algorithm, run in
// the same pass against the same redis-server. It is "" for a library with
// no ceiling of its algorithm (ulule's fixed window).
func ceilingOf(lib string) string {
	switch {
	case strings.HasPrefix(lib, "ceiling-"):
		return lib
	case strings.HasPrefix(lib, "ratelimitgen-gcra"), lib == "redis_rate":
		return "ceiling-gcra"
	case strings.HasPrefix(lib, "ratelimitgen-sliding-log"), lib == "seed-lua":
		return "ceiling-sliding-log"
	}
	return ""
}

// against returns a row's ratios of decisions/s and of p50 to base's, or
// "1" when the row is base and "–" when there is no base.
func against(r, base *row) (tput, lat string) {
	switch {
	case base == nil:
		return "–", "–"
	case base == r:
		return "1", "1"
	}
	return ratio(pairedRatios(r.decisionsPerSec(), base.decisionsPerSec())),
		ratio(pairedRatios(r.values("p50-µs"), base.values("p50-µs")))
}

// render writes the markdown table.
func render(w io.Writer, res *results, notes []string) error {
	var b strings.Builder
	preamble(&b, res, notes, "ratios against "+baseline+" and against the ceiling of the row's algorithm (bench/ceiling.go: a minimal batched client, GCRA or sliding log) in the same setting, repetition by repetition (median, range)")
	b.WriteString("\n| library | callers | keys | decisions/s | × redis_rate | × ceiling | p50 µs | p50 × redis_rate | p50 × ceiling | p99 µs | allocs/op | B/op | Redis µs/op | client CPU µs/op | Redis calls/op | admitted/op |\n")
	b.WriteString("|---|---:|---|---:|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range res.settings {
		for _, lib := range res.libs {
			r := res.rows[lib][s]
			if r == nil {
				continue
			}
			tput, lat := against(r, res.rows[baseline][s])
			var ceil *row
			if name := ceilingOf(lib); name != "" {
				ceil = res.rows[name][s]
			}
			ctput, clat := against(r, ceil)
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				lib, s.callers, s.keys,
				sig(median(r.decisionsPerSec())), tput, ctput,
				sig(median(r.values("p50-µs"))), lat, clat,
				sig(median(r.values("p99-µs"))),
				sig(median(r.values("allocs/op"))),
				sig(median(r.values("B/op"))),
				sig(median(r.values("redis-µs/op"))),
				sig(median(r.values("client-µs/op"))),
				sig(median(r.values("redis-calls/op"))),
				sig(median(r.values("admitted/op"))))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// preamble writes what a table says before its rows: the repetitions, what
// its ratios are, GOMAXPROCS, go test's header lines and the notes.
func preamble(b *strings.Builder, res *results, notes []string, ratios string) {
	reps := 0
	for _, byS := range res.rows {
		for _, r := range byS {
			reps = max(reps, len(r.runs))
		}
	}
	fmt.Fprintf(b, "Medians of %d repetitions; %s.", reps, ratios)
	if res.procs != "" {
		fmt.Fprintf(b, " GOMAXPROCS %s.", res.procs)
	}
	b.WriteString("\n")
	for _, h := range res.header {
		fmt.Fprintf(b, "%s\n", h)
	}
	for _, n := range notes {
		fmt.Fprintf(b, "%s\n", n)
	}
}
