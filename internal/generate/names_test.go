package generate

import "testing"

func TestNamesFresh(t *testing.T) {
	root := newRootNames()
	file := root.child()
	file.reserve("runtime")
	file.reserve("r")
	method := file.child()

	cases := []struct {
		scope      *names
		base, want string
	}{
		{method, "d", "d"},
		{method, "d", "d1"},           // taken in the same scope
		{method, "r", "r1"},           // taken in the enclosing scope
		{method, "string", "string1"}, // predeclared
		{method, "func", "func1"},     // keyword
		{file.child(), "d", "d"},      // a sibling scope does not see method's names
	}
	for _, c := range cases {
		if got := c.scope.fresh(c.base); got != c.want {
			t.Errorf("fresh(%q) = %q, want %q", c.base, got, c.want)
		}
	}
	if got := file.freshImport("runtime"); got != "runtime1" {
		t.Errorf("freshImport(runtime) = %q, want runtime1", got)
	}
	// jennifer refuses err as an import name, whatever the registry says.
	if got := file.freshImport("err"); got != "err1" {
		t.Errorf("freshImport(err) = %q, want err1", got)
	}
	if !file.has("runtime1") || root.has("runtime1") {
		t.Error("freshImport must reserve its result in its own scope only")
	}
}
