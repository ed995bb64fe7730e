package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

func writeFile(t *testing.T, path, contents string) {
	t.Helper()
	// Written beside and renamed over, as editors and ConfigMaps do, so
	// that the watcher never reads a half-written file.
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(contents), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func TestLoadFileAcceptsEveryField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	writeFile(t, path, `{"limits": {
		"A.Send":  {"max": 10, "window": "30s", "burst": 4, "mode": "shadow"},
		"B.Query": {"mode": "off"},
		"C.List":  {}
	}}`)
	var ov runtime.Overrides
	require.NoError(t, ov.LoadFile(path))
	reqs := runtime.ApplyOverrides(&ov, []runtime.Request{
		{Limit: runtime.Limit{Name: "A.Send", Window: time.Minute, Max: 3}},
		{Limit: runtime.Limit{Name: "B.Query", Window: time.Second, Max: 50}},
		{Limit: runtime.Limit{Name: "C.List", Window: time.Second, Max: 5}},
		{Limit: runtime.Limit{Name: "D.Other", Window: time.Second, Max: 7}},
	})
	require.Equal(t, runtime.Limit{Name: "A.Send", Window: 30 * time.Second, Max: 10, Burst: 4, Mode: runtime.ModeShadow}, reqs[0].Limit)
	require.Equal(t, runtime.Limit{Name: "B.Query", Window: time.Second, Max: 50, Mode: runtime.ModeOff}, reqs[1].Limit)
	require.Equal(t, runtime.Limit{Name: "C.List", Window: time.Second, Max: 5}, reqs[2].Limit)
	require.Equal(t, runtime.Limit{Name: "D.Other", Window: time.Second, Max: 7}, reqs[3].Limit)
}

// TestLoadFileRejectsMistakes: each mistake is an error naming it, and
// the overrides in force stay.
func TestLoadFileRejectsMistakes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	var ov runtime.Overrides
	require.NoError(t, ov.Set(map[string]runtime.Override{"A.Send": {Max: 9}}))
	for contents, want := range map[string]string{
		`{"limits": {"A.Send": {"maxx": 3}}}`:      `unknown field "maxx"`,
		`{"limit": {}}`:                            `unknown field "limit"`,
		`{"limits": {"A.Send": {"max": 0}}}`:       `"A.Send": max 0 must be at least 1`,
		`{"limits": {"A.Send": {"burst": -1}}}`:    `"A.Send": burst -1 must be at least 1`,
		`{"limits": {"A.Send": {"window": "60"}}}`: `"A.Send": window "60" must be a Go duration`,
		`{"limits": {"A.Send": {"mode": "loud"}}}`: `unknown mode "loud"`,
		`{"limits": {"A.Send": {"max": "3"}}}`:     `cannot unmarshal string`,
		`{"limits": {}} {}`:                        `more than one JSON value`,
		`{"limits": {"A.Send": {"max": 3}`:         `unexpected EOF`,
	} {
		writeFile(t, path, contents)
		err := ov.LoadFile(path)
		require.ErrorContains(t, err, want, contents)
		require.ErrorContains(t, err, path)
		require.Equal(t, 9, runtime.ApplyOverrides(&ov, []runtime.Request{{Limit: runtime.Limit{Name: "A.Send", Max: 1}}})[0].Limit.Max, contents)
	}
	require.ErrorContains(t, ov.LoadFile(filepath.Join(t.TempDir(), "missing.json")), "reading overrides")
}

// TestWatchFileReloads: a change is in force after the reload that reports
// it; a malformed file keeps the last good overrides and is reported; the
// good file's return is reported too.
func TestWatchFileReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	writeFile(t, path, `{"limits": {"W.Send": {"max": 2}}}`)
	mem, _ := newTestMemory()
	var ov runtime.Overrides
	lim := runtime.Operate(mem, runtime.WithOverrides(&ov))
	reports := make(chan error, 16)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	require.NoError(t, ov.WatchFile(wctx, path, 5*time.Millisecond, func(err error) { reports <- err }))
	next := func() error {
		t.Helper()
		select {
		case err := <-reports:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("no reload reported")
			return nil
		}
	}

	req := runtime.Request{Limit: runtime.Limit{Name: "W.Send", Window: time.Minute, Max: 1}, Key: "k"}
	require.NoError(t, runtime.Enforce(ctx, lim, req))
	require.NoError(t, runtime.Enforce(ctx, lim, req), "the first load is in force when WatchFile returns")
	require.ErrorIs(t, runtime.Enforce(ctx, lim, req), runtime.ErrLimited)

	writeFile(t, path, `{"limits": {"W.Send": {"max": 3}}}`)
	require.NoError(t, next())
	require.NoError(t, runtime.Enforce(ctx, lim, req))
	require.ErrorIs(t, runtime.Enforce(ctx, lim, req), runtime.ErrLimited)

	writeFile(t, path, `{"limits": {"W.Send": {"max": 100`)
	require.ErrorContains(t, next(), "unexpected EOF")
	require.ErrorIs(t, runtime.Enforce(ctx, lim, req), runtime.ErrLimited, "the last good overrides stay in force")
	// An unchanged file is not reported again, however many checks pass.
	select {
	case err := <-reports:
		t.Fatalf("an unchanged file was reported again: %v", err)
	case <-time.After(100 * time.Millisecond):
	}

	require.NoError(t, os.Remove(path))
	require.ErrorContains(t, next(), "reading overrides")
	writeFile(t, path, `{"limits": {"W.Send": {"mode": "shadow"}}}`)
	require.NoError(t, next())
	require.NoError(t, runtime.Enforce(ctx, lim, req))

	cancel()
}

func TestWatchFileFirstLoadMustSucceed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides.json")
	var ov runtime.Overrides
	require.ErrorContains(t, ov.WatchFile(ctx, path, time.Second, nil), "reading overrides")
	writeFile(t, path, `{"limits": {"A": {"max": -3}}}`)
	require.ErrorContains(t, ov.WatchFile(ctx, path, time.Second, nil), "max -3 must be at least 1")
	require.Error(t, ov.WatchFile(ctx, path, 0, nil))
}
