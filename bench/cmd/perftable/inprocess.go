package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// inProcessBaseline is the peer the In process table compares a setting
// with, as the targets are set: a single x/time/rate limiter on
// the hot key, sethvargo/go-limiter's memorystore otherwise.
func inProcessBaseline(s setting) string {
	if s.keys == "hot" {
		return "xtime-rate-single"
	}
	return "sethvargo-memorystore"
}

// inProcessOrder is the order of the In process table's settings: the
// targets' first.
var inProcessOrder = []setting{{64, "4096"}, {2, "4096"}, {1, "4096"}, {64, "hot"}, {2, "hot"}, {1, "hot"}, {1, "new"}}

// renderInProcess writes the In process table: per row, the median ns/op
// with its range, the median of its ratios to the setting's baseline
// repetition by repetition (with their range), and the medians of the
// other metrics.
func renderInProcess(w io.Writer, res *results, notes []string) error {
	var b strings.Builder
	preamble(&b, res, notes, "ratios of ns/op against the setting's baseline in the same repetition (median, range)")
	b.WriteString("\n| library | callers | keys | ns/op | range | ratio | admitted/op | B/op | allocs/op | B/idle-key |\n")
	b.WriteString("|---|---:|---|---:|---|---|---:|---:|---:|---:|\n")
	settings := slices.Clone(res.settings)
	slices.SortStableFunc(settings, func(a, b setting) int {
		return index(inProcessOrder, a) - index(inProcessOrder, b)
	})
	for _, s := range settings {
		bl := inProcessBaseline(s)
		base := res.rows[bl][s]
		for _, lib := range res.libs {
			r := res.rows[lib][s]
			if r == nil {
				continue
			}
			ns := r.values("ns/op")
			rat := "–"
			switch {
			case lib == bl:
				rat = "1"
			case base != nil:
				rat = ratio(pairedRatios(ns, base.values("ns/op"))) + " " + strings.TrimPrefix(strings.TrimPrefix(bl, "sethvargo-"), "xtime-rate-")
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s–%s | %s | %s | %s | %s | %s |\n",
				lib, s.callers, s.keys,
				sig(median(ns)), sig(slices.Min(ns)), sig(slices.Max(ns)), rat,
				sig(median(r.values("admitted/op"))),
				sig(median(r.values("B/op"))),
				sig(median(r.values("allocs/op"))),
				sig(median(r.values("B/idle-key"))))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// index returns s's place in order, or len(order) if absent.
func index(order []setting, s setting) int {
	if i := slices.Index(order, s); i >= 0 {
		return i
	}
	return len(order)
}
