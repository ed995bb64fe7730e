package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeyTuplesNeverCollide(t *testing.T) {
	pairs := [][2][]string{
		{{"a:b", "c"}, {"a", "b:c"}},
		{{"", "ab"}, {"a", "b"}},
		{{"1:a"}, {"a"}},
		{{"a", ""}, {"a"}},
		{{"", ""}, {""}},
		{{"3:abc"}, {"abc", ""}},
	}
	for _, p := range pairs {
		require.NotEqual(t, Key(p[0]...), Key(p[1]...), "%q vs %q", p[0], p[1])
	}
	require.Equal(t, Key("a", "b"), string(AppendKeyPart(AppendKeyPart(nil, "a"), "b")))
	require.Equal(t, Key("-42", "18446744073709551615"), string(AppendKeyUint(AppendKeyInt(nil, -42), 1<<64-1)))
}

// FuzzKey checks that distinct tuples give distinct keys, whatever bytes
// the parts hold. runtime/redislimit fuzzes the storage keys built on them.
func FuzzKey(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add("{x}", "", "{x", "}")
	f.Add("*", "::", "", "*::")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		if (a != c || b != d) && Key(a, b) == Key(c, d) {
			t.Fatalf("Key(%q, %q) == Key(%q, %q)", a, b, c, d)
		}
	})
}

func TestLimitErrorNeverShowsKey(t *testing.T) {
	l := Limit{Name: "Notifier.SendCode", Window: 60e9, Max: 3}
	err := &LimitError{Limit: l, Decision: Decision{RetryAfter: 41_200_000_001}}
	require.ErrorIs(t, err, ErrLimited)
	require.Equal(t, `ratelimit: "Notifier.SendCode" allows 3 calls per 1m0s; retry in 41.201s`, err.Error())
}
