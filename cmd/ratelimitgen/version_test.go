package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{
			name: "go install or go run pkg@version",
			info: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: modulePath, Version: "v1.4.0"}},
			want: "ratelimitgen v1.4.0 go1.26.1",
		},
		{
			name: "go tool in another module",
			info: &debug.BuildInfo{GoVersion: "go1.25.3", Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
				Deps: []*debug.Module{{Path: "github.com/redis/go-redis/v9", Version: "v9.22.0"}, {Path: modulePath, Version: "v1.4.0"}}},
			want: "ratelimitgen v1.4.0 go1.25.3",
		},
		{
			name: "go tool with a replace",
			info: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "example.com/app"},
				Deps: []*debug.Module{{Path: modulePath, Version: "v0.0.0", Replace: &debug.Module{Path: "../ratelimitgen"}}}},
			want: "ratelimitgen v0.0.0 => ../ratelimitgen go1.26.1",
		},
		{
			name: "a checkout",
			info: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: modulePath, Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0fc5843"}, {Key: "vcs.modified", Value: "true"}}},
			want: "ratelimitgen (devel) 0fc5843+modified go1.26.1",
		},
	} {
		if got := version(c.info, true); got != c.want {
			t.Errorf("%s: version = %q, want %q", c.name, got, c.want)
		}
	}
	if got := version(nil, false); !strings.Contains(got, "no build information") {
		t.Errorf("without build info: %q", got)
	}
	code, stdout, _ := ratelimitgen(t, "-version")
	if code != 0 || !strings.HasPrefix(stdout, "ratelimitgen ") {
		t.Errorf("-version: status %d, output %q", code, stdout)
	}
}
