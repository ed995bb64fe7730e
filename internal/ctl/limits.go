package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ratelimitgen/ratelimitgen/internal/manifest"
	"github.com/ratelimitgen/ratelimitgen/internal/parse"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// A known limit is one limit as the service applies it: the manifest's
// values with the overrides file's in their place.
type known struct {
	limit runtime.Limit
	// declared is the limit as the manifest declares it, before overrides;
	// its Max is 0 when each call computes it (maxExpr).
	declared runtime.Limit
	maxExpr  string
	// keyParts are the key's parts as the directive writes them; with more
	// than one, the key is runtime.Key of the parts.
	keyParts []string
	// overridden says that the overrides file changes the limit; inManifest
	// that the manifest declares it.
	overridden, inManifest bool
	where                  string
}

// loadLimits reads the manifest and the overrides file (either may be "")
// and returns the limits they name, in the manifest's order, then the
// names only the overrides file gives, sorted.
func loadLimits(manifestPath, overridesPath string) ([]known, error) {
	if manifestPath == "" && overridesPath == "" {
		return nil, errors.New("no limits to work with: give -manifest file.json (the output of `ratelimitgen -list -json`) and/or -overrides file.json (the service's overrides file)")
	}
	var limits []known
	if manifestPath != "" {
		b, err := os.ReadFile(manifestPath)
		if err != nil {
			return nil, fmt.Errorf("reading the manifest: %w (write one with `ratelimitgen -list -json ./... > %s`)", err, manifestPath)
		}
		var entries []manifest.Entry
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&entries); err != nil {
			return nil, fmt.Errorf("manifest %s is not the output of `ratelimitgen -list -json`: %v", manifestPath, err)
		}
		for _, e := range entries {
			k, err := fromManifest(e)
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %v", manifestPath, err)
			}
			if slices.ContainsFunc(limits, func(o known) bool { return o.limit.Name == k.limit.Name }) {
				// A limit listed by several packages (through embedding)
				// is one limit.
				continue
			}
			limits = append(limits, k)
		}
	}
	if overridesPath == "" {
		return limits, nil
	}
	return applyOverrides(limits, overridesPath)
}

// fromManifest returns the limit e declares.
func fromManifest(e manifest.Entry) (known, error) {
	if e.Name == "" {
		return known{}, errors.New("a limit has no name")
	}
	window, max := e.Window, e.Max
	if e.Algorithm == runtime.Concurrency {
		window, max = e.Lease, e.Concurrency
	}
	l := runtime.Limit{Name: e.Name, Max: max, Algorithm: e.Algorithm, Burst: e.Burst, Mode: e.Mode}
	if p, ok := parse.CalendarWindow(window); ok {
		// A calendar window: the manifest names its zone, "UTC" for none.
		zone := e.Zone
		if zone == "UTC" {
			zone = ""
		}
		l.Calendar = runtime.Calendar{Period: p, Zone: zone}
	} else {
		d, err := time.ParseDuration(window)
		if err != nil {
			return known{}, fmt.Errorf("limit %s: window %q: %v", e.Name, window, err)
		}
		l.Window = d
	}
	k := known{limit: l, declared: l, maxExpr: e.MaxExpr, keyParts: e.Key, inManifest: true}
	if e.File != "" {
		k.where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return k, nil
}

// applyOverrides loads the overrides file as the service does (through
// runtime.Overrides, which refuses what the service would refuse) and
// returns limits with the overrides applied, plus a limit for every name
// the file gives that the manifest does not.
func applyOverrides(limits []known, path string) ([]known, error) {
	var ov runtime.Overrides
	if err := ov.LoadFile(path); err != nil {
		return nil, err
	}
	// Before AddLimits, Unmatched names every override of the file.
	named := ov.Unmatched()
	reqs := make([]runtime.Request, len(limits))
	for i, k := range limits {
		reqs[i] = runtime.Request{Limit: k.declared}
	}
	if len(reqs) > 0 {
		if err := ov.AddLimits(reqs...); err != nil {
			return nil, fmt.Errorf("the service would refuse overrides file %s: %w", path, err)
		}
	}
	for _, name := range named {
		i := slices.IndexFunc(limits, func(k known) bool { return k.limit.Name == name })
		if i < 0 {
			limits = append(limits, known{limit: runtime.Limit{Name: name}, declared: runtime.Limit{Name: name}})
			i = len(limits) - 1
		}
		limits[i].overridden = true
		limits[i].limit = overridden(&ov, limits[i].declared)
	}
	return limits, nil
}

// overridden returns l as the overrides ov change it, applied by the
// runtime itself: a Limiter made with runtime.Operate and
// runtime.WithOverrides hands the requests it is asked to peek at to the
// Limiter it wraps, here one that only keeps them.
func overridden(ov *runtime.Overrides, l runtime.Limit) runtime.Limit {
	var c captured
	_, _ = runtime.Peek(context.Background(), runtime.Operate(&c, runtime.WithOverrides(ov)), runtime.Request{Limit: l})
	if len(c.reqs) == 1 {
		return c.reqs[0].Limit
	}
	return l
}

// captured is a Peeker that decides nothing and keeps the requests of its
// last Peek.
type captured struct{ reqs []runtime.Request }

func (c *captured) Decide(context.Context, ...runtime.Request) (runtime.Decisions, error) {
	return runtime.Decisions{}, errors.New("ratelimitctl: captured decides nothing")
}

func (c *captured) Peek(_ context.Context, reqs ...runtime.Request) (runtime.Decisions, error) {
	c.reqs = slices.Clone(reqs)
	return runtime.Decisions{}, nil
}

// find returns the limit named name: exactly, or the one limit whose name
// ends in "."+name or "/"+name, so that "Notifier.SendCode" finds
// "example.com/notify.Notifier.SendCode". An unknown name is an error that
// suggests the names nearest to it.
func find(limits []known, name string) (known, error) {
	if name == "" {
		return known{}, errors.New("give the limit's name with -limit (see `ratelimitctl list`)")
	}
	var matches []known
	for _, k := range limits {
		if k.limit.Name == name {
			return k, nil
		}
		if strings.HasSuffix(k.limit.Name, "."+name) || strings.HasSuffix(k.limit.Name, "/"+name) {
			matches = append(matches, k)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		// The RateLimit fields name a limit with the bytes outside
		// printable ASCII, and '%', as %xx.
		if decoded, err := url.PathUnescape(name); err == nil && decoded != name {
			if k, err := find(limits, decoded); err == nil {
				return k, nil
			}
		}
		msg := fmt.Sprintf("no limit named %q", name)
		if near := nearNames(limits, name); len(near) > 0 {
			msg += "; did you mean " + strings.Join(quoteAll(near), " or ") + "?"
		} else {
			msg += " (see `ratelimitctl list`)"
		}
		return known{}, errors.New(msg)
	}
	var names []string
	for _, k := range matches {
		names = append(names, k.limit.Name)
	}
	return known{}, fmt.Errorf("%q names %d limits: %s; give the whole name", name, len(names), strings.Join(quoteAll(names), ", "))
}

// nearNames returns up to three names of limits near name: those whose
// name or whose last parts contain it, ignoring case, or lie within a few
// edits of it.
func nearNames(limits []known, name string) []string {
	type scored struct {
		name string
		d    int
	}
	var near []scored
	lower := strings.ToLower(name)
	for _, k := range limits {
		full := k.limit.Name
		short := shortName(full)
		d := min(parse.EditDistance(lower, strings.ToLower(short)), parse.EditDistance(lower, strings.ToLower(full)))
		if strings.Contains(strings.ToLower(full), lower) || strings.Contains(lower, strings.ToLower(short)) {
			d = 0
		}
		if d <= max(2, len(name)/3) {
			near = append(near, scored{full, d})
		}
	}
	slices.SortStableFunc(near, func(a, b scored) int { return a.d - b.d })
	var out []string
	for _, s := range near[:min(3, len(near))] {
		out = append(out, s.name)
	}
	return out
}

// shortName returns name without its package path: "Notifier.SendCode"
// for "example.com/notify.Notifier.SendCode".
func shortName(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return name
	}
	name = name[i+1:]
	if j := strings.IndexByte(name, '.'); j >= 0 {
		name = name[j+1:]
	}
	return name
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
