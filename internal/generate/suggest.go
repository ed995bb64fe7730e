package generate

import "strings"

// closest returns the candidate nearest to name by edit distance, if it is
// near enough to be a likely typo.
func closest(name string, candidates []string) (string, bool) {
	best, bestDist := "", len(name)/2+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, best != ""
}

// closestParam returns the parameter that name likely misspells: the
// nearest by edit distance, or one that name abbreviates or expands
// (request for req, id for userID).
func closestParam(name string, params []string) (string, bool) {
	if s, ok := closest(name, params); ok {
		return s, true
	}
	lower := strings.ToLower(name)
	for _, p := range params {
		lp := strings.ToLower(p)
		if len(lp) >= 2 && len(lower) >= 2 && (strings.HasPrefix(lower, lp) || strings.HasPrefix(lp, lower) || strings.HasSuffix(lp, lower)) {
			return p, true
		}
	}
	return "", false
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
