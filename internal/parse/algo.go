package parse

import (
	"strconv"
	"strings"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// The values of algo= are the runtime's algorithms, runtime.Algorithms(),
// spelt as their string values; the first is the default. What follows
// knows only how people misspell them.

// BurstApplies reports whether burst= sizes a bucket of algorithm a: as the
// runtime computes capacities, a limit of a with a burst of 1 below its max
// admits at most 1 unit at once. Concurrency, whose capacity is always 1,
// has none.
func BurstApplies(a runtime.Algorithm) bool {
	return a != runtime.Concurrency && runtime.Limit{Max: 2, Burst: 1, Algorithm: a}.Capacity() == 1
}

// algoSynonyms maps names other rate limiters use to the algorithm that
// means the same here. Keys are normalised as by normalizeAlgo.
var algoSynonyms = map[string]string{
	"leaky-bucket":       "gcra",
	"leaky":              "gcra",
	"leaky-bucket-meter": "gcra",
	"generic-cell-rate":  "gcra",
	"sliding-window-log": "sliding-log",
	"log":                "sliding-log",
	"zset":               "sliding-log",
	"sliding-counter":    "sliding-window",
	"sliding-buckets":    "sliding-window",
	"fixed":              "fixed-window",
	"counter":            "fixed-window",
	"bucket":             "token-bucket",
	"token":              "token-bucket",
}

// checkAlgo checks algo=, one of runtime.Algorithms() exactly as its
// string value.
func (p *parser) checkAlgo(v value) {
	s := v.Value
	if isAlgorithm(s) {
		p.d.Algorithm = runtime.Algorithm(s)
		return
	}
	if q := s[0]; q == '"' || q == '`' || q == '\'' {
		if u, err := strconv.Unquote(s); err == nil && isAlgorithm(u) {
			p.errorf(v.off, "write the algorithm without quotes: algo=%s", u)
			return
		}
	}
	if s == string(runtime.Concurrency) {
		p.errorf(v.off, "a limit of calls in flight is written concurrency=N (with lease=, not window= or max=), e.g. concurrency=2")
		return
	}
	list := algorithmList()
	if a, ok := suggestAlgorithm(s); ok {
		p.errorf(v.off, "unknown algorithm %q; did you mean %q? The algorithms are %s", s, a, list)
		return
	}
	p.errorf(v.off, "unknown algorithm %q; the algorithms are %s", s, list)
}

func isAlgorithm(s string) bool {
	for _, a := range runtime.Algorithms() {
		if s == string(a) {
			return true
		}
	}
	return false
}

// algorithmList spells the algorithms for messages.
func algorithmList() string {
	var names []string
	for _, a := range runtime.Algorithms() {
		names = append(names, string(a))
	}
	return names[0] + " (the default), " + strings.Join(names[1:], ", ")
}

// suggestAlgorithm returns the algorithm that s most likely means: the same
// name in another case or with other separators, a synonym, or the closest
// name if it is near enough to be a typo.
func suggestAlgorithm(s string) (string, bool) {
	n := normalizeAlgo(s)
	if a, ok := algoSynonyms[n]; ok {
		return a, true
	}
	squashed := strings.ReplaceAll(n, "-", "")
	best, bestDist := "", 4
	for _, algo := range runtime.Algorithms() {
		a := string(algo)
		if squashed == strings.ReplaceAll(a, "-", "") {
			return a, true
		}
		if d := EditDistance(n, a); d < bestDist && d < len(n) {
			best, bestDist = a, d
		}
	}
	return best, best != ""
}

// normalizeAlgo lower-cases s and writes its separators as "-".
func normalizeAlgo(s string) string {
	if len(s) > 64 {
		return s // far from any name; spare the edit distance
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', ' ', '.':
			return '-'
		}
		return r
	}, strings.ToLower(s))
}

// checkBurst checks burst=, a count like max=. Whether the algorithm has a
// burst is checked once every option is known, by checkBurstAlgo.
func (p *parser) checkBurst(v value) {
	if n, ok := p.parseCount(v, "burst", "burst=20"); ok {
		p.d.Burst = n
	}
}

// burstAlgorithms spells the algorithms that burst= applies to, for
// messages: "algo=token-bucket and algo=gcra".
func burstAlgorithms() string {
	var names []string
	for _, a := range runtime.Algorithms() {
		if BurstApplies(a) {
			names = append(names, "algo="+string(a))
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// checkBurstAlgo reports a burst= on an algorithm without a bucket. It is
// silent while algo= is itself wrong, which is reported already.
func (p *parser) checkBurstAlgo() {
	burst, ok := p.d.Lookup("burst")
	if !ok || BurstApplies(p.d.Algorithm) {
		return
	}
	uses := string(runtime.Algorithms()[0]) + " (the default, as there is no algo=)"
	if w, _ := p.d.Lookup("window"); p.d.Calendar.Period != 0 {
		uses = string(runtime.FixedWindow) + " (as window=" + w.Value + " is a calendar window)"
	}
	if a, set := p.d.Lookup("algo"); set {
		if p.d.Algorithm == "" {
			return
		}
		uses = "algo=" + a.Value
	}
	p.errs = append(p.errs, &Error{
		Pos: burst.NamePos,
		Msg: "burst= applies only to " + burstAlgorithms() + ", whose bucket it sizes; this directive uses " + uses + ": remove burst= or choose one of those algorithms",
	})
}
