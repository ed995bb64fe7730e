package redislimit

import (
	"embed"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Scripts are assembled from lua/header.lua, one file per algorithm and
// lua/main.lua. A call whose limits all use one algorithm runs that
// algorithm's script: Redis re-runs a script's top level on every call, so
// defining only the algorithm in use keeps each decision cheap. A call that
// mixes algorithms runs the script holding all of them. These values are
// built once and never change.
var (
	algoScripts = func() map[runtime.Algorithm]*redis.Script {
		m := make(map[runtime.Algorithm]*redis.Script, len(algoSpecs))
		for a, spec := range algoSpecs {
			m[a] = redis.NewScript(assembleScript(spec.file))
		}
		return m
	}()
	mixedScript = func() *redis.Script {
		var files []string
		for _, spec := range algoSpecs {
			files = append(files, spec.file)
		}
		slices.Sort(files) // map order is random; the script text must not be
		return redis.NewScript(assembleScript(files...))
	}()
)

// scriptFor returns the script that can decide the requests at idx.
func scriptFor(reqs []runtime.Request, idx []int) *redis.Script {
	a := algorithmOf(reqs[idx[0]].Limit)
	for _, i := range idx[1:] {
		if algorithmOf(reqs[i].Limit) != a {
			return mixedScript
		}
	}
	return algoScripts[a]
}

func assembleScript(algorithms ...string) string {
	var b strings.Builder
	for _, name := range append(append([]string{"header.lua"}, algorithms...), "main.lua") {
		src, err := luaFiles.ReadFile("lua/" + name)
		if err != nil {
			panic("ratelimit: embedded script " + name + " missing: " + err.Error()) // a build defect
		}
		b.WriteString("-- lua/" + name + "\n")
		b.Write(src)
		b.WriteString("\n")
	}
	return b.String()
}
