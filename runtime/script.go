package runtime

import (
	"embed"
	"io/fs"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// limiterScript is every lua/*.lua file in one script: header.lua first,
// main.lua last, the algorithms between. One script decides any mix of
// algorithms and limits in one EVALSHA.
var limiterScript = redis.NewScript(assembleScript())

func assembleScript() string {
	names, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		panic(err) // the pattern is a constant
	}
	rank := func(n string) int {
		switch n {
		case "lua/header.lua":
			return 0
		case "lua/main.lua":
			return 2
		}
		return 1
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, n := range names {
		src, err := luaFiles.ReadFile(n)
		if err != nil {
			panic(err) // embedded at build time
		}
		b.WriteString("-- " + n + "\n")
		b.Write(src)
		b.WriteString("\n")
	}
	return b.String()
}
