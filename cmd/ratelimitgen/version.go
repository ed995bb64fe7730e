package main

import (
	"runtime/debug"
	"strings"
)

// modulePath is the module that holds this command and the runtime its
// output calls: one version for both.
const modulePath = "github.com/ratelimitgen/ratelimitgen"

// version describes the build of this binary from its build info: the
// module version it was built from (as `go tool`, `go run pkg@v` or
// `go install` recorded it), the VCS revision of a development build, and
// the Go version.
func version(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "ratelimitgen (no build information)"
	}
	mod := &info.Main
	if mod.Path != modulePath {
		// Built as a tool of another module (go get -tool): this module is
		// one of its dependencies.
		for _, dep := range info.Deps {
			if dep.Path == modulePath {
				mod = dep
				break
			}
		}
	}
	v := mod.Version
	if mod.Path != modulePath || v == "" {
		v = "(unknown)"
	}
	if mod.Replace != nil {
		r := mod.Replace.Path
		if rv := mod.Replace.Version; rv != "" && rv != "(devel)" {
			r += "@" + rv
		}
		v += " => " + r
	}
	parts := []string{"ratelimitgen", v}
	if rev := setting(info, "vcs.revision"); rev != "" {
		if setting(info, "vcs.modified") == "true" {
			rev += "+modified"
		}
		parts = append(parts, rev)
	}
	return strings.Join(append(parts, info.GoVersion), " ")
}

func setting(info *debug.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
