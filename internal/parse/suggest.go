package parse

import "strings"

// synonyms maps words authors reach for, from other rate limiters'
// vocabularies, to the option that means the same here.
var synonyms = map[string]string{
	"by":        "key",
	"keys":      "key",
	"count":     "max",
	"limit":     "max",
	"maximum":   "max",
	"rate":      "max",
	"duration":  "window",
	"every":     "window",
	"interval":  "window",
	"per":       "window",
	"period":    "window",
	"ttl":       "window",
	"label":     "name",
	"algorithm": "algo",
	"strategy":  "algo",
	"type":      "algo",
	"capacity":  "burst",
	"weight":    "cost",
	"permits":   "cost",
	"tokens":    "cost",
	"n":         "cost",
	"dryrun":    "mode",
	"shadow":    "mode",
	"enforce":   "mode",
	"enforced":  "mode",
}

// suggest returns the supported option the unknown name most likely means:
// a synonym, or the closest option by edit distance (ignoring case) if it is
// close enough to be a typo.
func suggest(name string) (string, bool) {
	lower := strings.ToLower(name)
	if s, ok := synonyms[lower]; ok {
		return s, true
	}
	best, bestDist := "", -1
	for _, o := range Options {
		d := EditDistance(lower, o)
		allowed := 1
		if len(o) >= 4 {
			allowed = 2
		}
		if d <= allowed && d < len(lower) && (bestDist < 0 || d < bestDist) {
			best, bestDist = o, d
		}
	}
	return best, bestDist >= 0
}

// EditDistance returns the optimal string alignment distance between a and
// b: insertions, deletions, substitutions and transpositions of adjacent
// bytes each cost 1.
func EditDistance(a, b string) int {
	if len(a) > 64 {
		return len(a) // far from any option name; spare the quadratic work
	}
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
