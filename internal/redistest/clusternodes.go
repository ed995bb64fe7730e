package redistest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// nodeEntry is one line of CLUSTER NODES: what one node believes about one
// node of the cluster (itself when myself is set).
type nodeEntry struct {
	id        string
	flags     []string
	masterID  string // for replicas; "" for masters
	connected bool   // link state of the observing node to this one
	slots     []slotRange
	migrating bool // a slot is being migrated away (myself only)
	importing bool // a slot is being imported (myself only)
}

// slotRange is an inclusive range of hash slots.
type slotRange struct{ first, last int }

func (e nodeEntry) has(flag string) bool { return slices.Contains(e.flags, flag) }
func (e nodeEntry) myself() bool         { return e.has("myself") }
func (e nodeEntry) master() bool         { return e.has("master") }
func (e nodeEntry) replica() bool        { return e.has("slave") }

// failing reports flags that mean the observer cannot use this node.
func (e nodeEntry) failing() bool {
	return e.has("fail") || e.has("fail?") || e.has("handshake") || e.has("noaddr")
}

func (e nodeEntry) owns(slot int) bool {
	for _, r := range e.slots {
		if r.first <= slot && slot <= r.last {
			return true
		}
	}
	return false
}

// role renders the topology-relevant part of the entry, for comparing views.
func (e nodeEntry) role() string {
	var b strings.Builder
	b.WriteString(e.id)
	if e.replica() {
		b.WriteString(" replica-of " + e.masterID)
	} else {
		b.WriteString(" master")
	}
	for _, r := range e.slots {
		fmt.Fprintf(&b, " %d-%d", r.first, r.last)
	}
	return b.String()
}

// parseClusterNodes parses a CLUSTER NODES reply, whose lines are
// <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv>
// <config-epoch> <link-state> <slot>...
// where a slot is "n", "n-m", or "[n->-id]"/"[n-<-id]" for a migration.
func parseClusterNodes(reply string) ([]nodeEntry, error) {
	var entries []nodeEntry
	for line := range strings.Lines(reply) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line has %d fields, want at least 8: %q", len(f), line)
		}
		e := nodeEntry{
			id:        f[0],
			flags:     strings.Split(f[2], ","),
			connected: f[7] == "connected",
		}
		if f[3] != "-" {
			e.masterID = f[3]
		}
		for _, s := range f[8:] {
			switch {
			case strings.Contains(s, "->-"):
				e.migrating = true
			case strings.Contains(s, "-<-"):
				e.importing = true
			default:
				r, err := parseSlotRange(s)
				if err != nil {
					return nil, fmt.Errorf("CLUSTER NODES line %q: %w", line, err)
				}
				e.slots = append(e.slots, r)
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// parseSlotRange parses "n" or "n-m".
func parseSlotRange(s string) (slotRange, error) {
	a, b, isRange := strings.Cut(s, "-")
	first, err := strconv.Atoi(a)
	if err != nil {
		return slotRange{}, fmt.Errorf("bad slot %q", s)
	}
	last := first
	if isRange {
		if last, err = strconv.Atoi(b); err != nil {
			return slotRange{}, fmt.Errorf("bad slot range %q", s)
		}
	}
	return slotRange{first, last}, nil
}
