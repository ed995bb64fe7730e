package redislimit

import (
	"embed"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Scripts are assembled from the constants Go shares with them
// (luaConstants), lua/header.lua, one file per algorithm and lua/main.lua.
// A call whose limits all use one algorithm runs that algorithm's script:
// Redis re-runs a script's top level on every call, so defining only the
// algorithm in use keeps each decision cheap. A call that mixes algorithms
// runs the script holding all of them. These values are built once and
// never change.
var (
	// codeScripts holds each algorithm's script by its code.
	codeScripts = func() (s [shadowFlag]*script) {
		for code, spec := range specsByCode {
			if spec.file != "" {
				s[code] = newScript(assembleScript(spec.file))
			}
		}
		return s
	}()
	// algoScripts holds codeScripts by algorithm.
	algoScripts = func() map[runtime.Algorithm]*script {
		m := make(map[runtime.Algorithm]*script, len(algoSpecs))
		for a, spec := range algoSpecs {
			m[a] = codeScripts[spec.code]
		}
		return m
	}()
	mixedScript = func() *script {
		var files []string
		for _, spec := range specsByCode {
			if spec.file != "" {
				files = append(files, spec.file)
			}
		}
		return newScript(assembleScript(files...))
	}()
	// leaseScript grants and releases leases (lua/lease.lua) for every
	// algorithm that leases.
	leaseScript = func() *script {
		var files []string
		for code, spec := range specsByCode {
			if spec.file != "" && leases(int64(code)) {
				files = append(files, spec.file)
			}
		}
		return newScript(assemble("lease.lua", files...))
	}()
)

// script is one assembled script, with its hash and source boxed once for
// the commands that run it.
type script struct {
	*redis.Script
	hash, src any
}

func newScript(src string) *script {
	s := redis.NewScript(src)
	return &script{Script: s, hash: s.Hash(), src: src}
}

// Command names, boxed once.
var (
	cmdEvalSha any = "evalsha"
	cmdEval    any = "eval"
)

// assembleScript returns the decision script of the algorithms' files,
// whose entry point is lua/main.lua.
func assembleScript(algorithms ...string) string { return assemble("main.lua", algorithms...) }

// assemble returns the script of lua/header.lua, the algorithms' files
// and entry, the file that runs them, last.
func assemble(entry string, algorithms ...string) string {
	consts := luaConstants()
	var b strings.Builder
	b.WriteString("-- Go's constants (protocol.go) stand in place of their names.\n")
	for _, name := range append(append([]string{"header.lua"}, algorithms...), entry) {
		src, err := luaFiles.ReadFile("lua/" + name)
		if err != nil {
			panic("ratelimit: embedded script " + name + " missing: " + err.Error()) // a build defect
		}
		b.WriteString("-- lua/" + name + "\n")
		b.WriteString(luaConstName.ReplaceAllStringFunc(string(src), func(id string) string {
			if v, ok := consts[id]; ok {
				return v
			}
			return id
		}))
		b.WriteString("\n")
	}
	return b.String()
}

// luaConstName matches the words that may name a constant of luaConstants.
var luaConstName = regexp.MustCompile(`\b[A-Z][A-Z0-9_]*\b`)
