package redislimit

import (
	"context"
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

// scriptArgs starts the arguments of a command running s: the command,
// the script and room for the number of keys, which args sets once the
// keys follow.
func (s *script) scriptArgs(keys int) []any {
	return s.appendArgs(make([]any, 0, 3+keys+2))
}

// appendArgs is scriptArgs, appended to args.
func (s *script) appendArgs(args []any) []any {
	return append(args, cmdEvalSha, s.hash, nil)
}

// doer runs a command: every go-redis client and pipeline does.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// run runs the command that args (from scriptArgs, with the keys and then
// the script's arguments appended) holds, and loads the script when the
// server does not know it (after SCRIPT FLUSH, a restart, a failover or on
// a new cluster node). It returns the reply's numbers, appended to res.
func (s *script) run(ctx context.Context, c doer, args []any, res []int64) ([]int64, error) {
	reply, err := c.Do(ctx, args...).Text()
	if err != nil && isNoScript(err) {
		args[0], args[1] = cmdEval, s.src
		reply, err = c.Do(ctx, args...).Text()
		args[0], args[1] = cmdEvalSha, s.hash
	}
	if err != nil {
		return res, err
	}
	return appendReply(res, reply)
}

// scriptOf returns the script that can decide the requests of d at idx.
func scriptOf(d *resolvedCall, idx []int) *script {
	code := d.asks[idx[0]].code % shadowFlag
	for _, i := range idx[1:] {
		if d.asks[i].code%shadowFlag != code {
			return mixedScript
		}
	}
	return codeScripts[code]
}

func assembleScript(algorithms ...string) string {
	consts := luaConstants()
	var b strings.Builder
	b.WriteString("-- Go's constants (protocol.go) stand in place of their names.\n")
	for _, name := range append(append([]string{"header.lua"}, algorithms...), "main.lua") {
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
