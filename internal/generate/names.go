package generate

import (
	"go/token"
	"go/types"
	"strconv"

	"github.com/dave/jennifer/jen"
)

// names is one level of the naming registry: the identifiers taken in a
// scope of the generated file, chained to the enclosing scope. Every
// identifier the generator introduces (import names, package-level
// variables, receivers, renamed parameters, locals) comes from fresh, so
// that it can neither collide with nor shadow a name the user's code or
// the generated code relies on. This is the classic bug of wrapper
// generators: a parameter called runtime, key or err that hides the
// generator's own identifier.
type names struct {
	parent *names
	taken  map[string]bool
}

// newRootNames returns the outermost scope. It holds every identifier the
// generated code must never declare: Go's keywords and predeclared
// identifiers: a local called string or nil would break the code around
// it.
func newRootNames() *names {
	n := &names{taken: map[string]bool{}}
	for _, s := range types.Universe.Names() {
		n.reserve(s)
	}
	for tok := token.BREAK; tok <= token.VAR; tok++ {
		if tok.IsKeyword() {
			n.reserve(tok.String())
		}
	}
	n.reserve("_")
	return n
}

// child returns a new scope nested in n.
func (n *names) child() *names {
	return &names{parent: n, taken: map[string]bool{}}
}

// has reports whether s is taken in n or any enclosing scope.
func (n *names) has(s string) bool {
	for ; n != nil; n = n.parent {
		if n.taken[s] {
			return true
		}
	}
	return false
}

// reserve marks s as taken in n.
func (n *names) reserve(s string) {
	n.taken[s] = true
}

// freshImport is fresh for an import name, which must also avoid the words
// jennifer refuses as import names (it would rename such an import behind
// the registry's back).
func (n *names) freshImport(base string) string {
	s := base
	for i := 1; n.has(s) || jen.IsReservedWord(s); i++ {
		s = base + strconv.Itoa(i)
	}
	n.reserve(s)
	return s
}

// fresh returns base if it is free, or else the first of base1, base2, ...
// that is, and reserves it in n.
func (n *names) fresh(base string) string {
	s := base
	for i := 1; n.has(s); i++ {
		s = base + strconv.Itoa(i)
	}
	n.reserve(s)
	return s
}
