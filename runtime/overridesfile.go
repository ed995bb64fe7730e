package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// LoadFile reads overrides from the JSON file at path and puts them in
// force, replacing the set before. The file holds an object whose "limits"
// member maps limit names, as `ratelimitgen -list` prints them, to
// overrides; each field is optional:
//
//	{
//	  "limits": {
//	    "Notifier.SendCode": {"max": 10, "window": "30s", "mode": "shadow"},
//	    "Orders.Query":      {"burst": 100},
//	    "Search.Suggest":    {"mode": "off"}
//	  }
//	}
//
// Window is a Go duration ("30s", "1m"), or a calendar window, "1d",
// "1w", "1mo" or "1y", with "tz" the IANA name of its time zone ("UTC"
// when absent): {"window": "1mo", "tz": "Europe/Berlin"} counts a limit
// per calendar month in Berlin, as a fixed window (see Override.Calendar),
// and {"window": "30s"} turns a calendar limit back into a 30-second
// window. "tz" without a calendar window is an error. Mode is "enforce",
// "shadow" or "off". An unknown member, a zero or negative number, an invalid value,
// or an override that would make a limit told by AddLimits invalid is an
// error naming it, and leaves the overrides in force unchanged, as Set
// does. A name that matches no such limit is no error: see Unmatched.
func (o *Overrides) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("ratelimit: reading overrides: %w", err)
	}
	return o.loadBytes(path, b)
}

// WatchFile loads path as LoadFile does, then checks it every interval
// until ctx is done, in a goroutine of its own, and loads it again whenever
// its contents change. It returns the first load's error, and then watches
// nothing. A later file that cannot be read or is refused leaves the last
// good overrides in force; report, if not nil, is called after each reload
// with its outcome: nil when the new contents are in force, the error
// otherwise. A file replaced by renaming another over it, as editors and
// Kubernetes ConfigMaps do, is seen like one edited in place.
//
// A name that matches no limit told by AddLimits does not refuse a file:
// to report such names, call Unmatched once WatchFile returns and in
// report when it is given nil.
func (o *Overrides) WatchFile(ctx context.Context, path string, interval time.Duration, report func(error)) error {
	if interval <= 0 {
		return fmt.Errorf("ratelimit: watching overrides: interval %v must be positive", interval)
	}
	last, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("ratelimit: reading overrides: %w", err)
	}
	if err := o.loadBytes(path, last); err != nil {
		return err
	}
	go o.watch(ctx, path, interval, last, report)
	return nil
}

// watch rereads path every interval until ctx is done. seen is the last
// contents read, and seenErr the outcome of loading them; a read error is
// reported once, and when the file can be read again its contents are
// loaded, or their earlier outcome reported again if they did not change.
func (o *Overrides) watch(ctx context.Context, path string, interval time.Duration, seen []byte, report func(error)) {
	if report == nil {
		report = func(error) {}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var seenErr, readErr error
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(path)
		switch {
		case err != nil:
			err = fmt.Errorf("ratelimit: reading overrides: %w", err)
			if readErr == nil || readErr.Error() != err.Error() {
				report(err)
			}
			readErr = err
		case bytes.Equal(b, seen):
			if readErr != nil {
				readErr = nil
				report(seenErr)
			}
		default:
			seen, readErr = b, nil
			seenErr = o.loadBytes(path, b)
			report(seenErr)
		}
	}
}

func (o *Overrides) loadBytes(path string, b []byte) error {
	m, err := parseOverrides(b)
	if err == nil {
		err = o.set(m)
	}
	if err != nil {
		return fmt.Errorf("ratelimit: overrides file %s refused, the overrides in force stay: %w", path, err)
	}
	return nil
}

// overrideJSON is an override as the file spells it: pointers tell an
// absent member from a zero, which the file may not hold.
type overrideJSON struct {
	Max    *int    `json:"max"`
	Window *string `json:"window"`
	TZ     *string `json:"tz"`
	Burst  *int    `json:"burst"`
	Mode   *Mode   `json:"mode"`
}

// calendarWindows maps the file's calendar windows to their periods.
var calendarWindows = map[string]Period{"1d": Day, "1w": Week, "1mo": Month, "1y": Year}

func parseOverrides(b []byte) (map[string]Override, error) {
	var file struct {
		Limits map[string]overrideJSON `json:"limits"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	m := make(map[string]Override, len(file.Limits))
	for name, j := range file.Limits {
		var ov Override
		if j.Max != nil {
			if *j.Max < 1 {
				return nil, fmt.Errorf("%q: max %d must be at least 1", name, *j.Max)
			}
			ov.Max = *j.Max
		}
		if j.Window != nil {
			if p, ok := calendarWindows[*j.Window]; ok {
				ov.Calendar.Period = p
			} else if d, err := time.ParseDuration(*j.Window); err != nil || d < time.Microsecond {
				return nil, fmt.Errorf("%q: window %q must be a Go duration of at least 1µs, such as \"30s\", or a calendar window: \"1d\", \"1w\", \"1mo\" or \"1y\"", name, *j.Window)
			} else {
				ov.Window = d
			}
		}
		if j.TZ != nil {
			if ov.Calendar.Period == 0 {
				return nil, fmt.Errorf("%q: tz %q applies only to a calendar window; give it with \"window\": \"1d\", \"1w\", \"1mo\" or \"1y\"", name, *j.TZ)
			}
			if *j.TZ == "" {
				return nil, fmt.Errorf("%q: tz is empty; name a time zone such as \"Europe/Berlin\", or remove tz for UTC", name)
			}
			ov.Calendar.Zone = *j.TZ
		}
		if j.Burst != nil {
			if *j.Burst < 1 {
				return nil, fmt.Errorf("%q: burst %d must be at least 1", name, *j.Burst)
			}
			ov.Burst = *j.Burst
		}
		ov.Mode = j.Mode
		m[name] = ov
	}
	return m, nil
}
