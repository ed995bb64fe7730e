package redislimit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// FuzzStorageKey checks that distinct tuples give distinct storage keys,
// and that every storage key is short and has exactly the hash tag the
// limiter chose, whatever bytes the inputs hold. (runtime's FuzzKey checks
// runtime.Key itself.)
func FuzzStorageKey(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c", "Notifier.SendCode")
	f.Add("{x}", "", "{x", "}", "N{ame}")
	f.Add("*", "::", "", "*::", strings.Repeat("n", 300))
	f.Fuzz(func(t *testing.T, a, b, c, d, name string) {
		if a != c || b != d {
			if storageKey(name, runtime.Key(a, b)) == storageKey(name, runtime.Key(c, d)) {
				t.Fatalf("storage keys collide for (%q, %q) and (%q, %q)", a, b, c, d)
			}
		}
		if name+"x" != name && storageKey(name, a) == storageKey(name+"x", a) {
			t.Fatalf("names %q and %q share a storage key", name, name+"x")
		}
		for _, k := range []string{a, runtime.Key(a, b), a + b + c + d} {
			checkStorageKey(t, storageKey(name, k), k)
		}
	})
}

func storageKey(name, key string) string {
	return string(appendStorageKey(nil, defaultPrefix, algoSpecs[runtime.SlidingLog].tag, name, key))
}

// checkStorageKey asserts what Redis Cluster will see: the slot is chosen by
// the limiter's tag for key alone, and the key is at most 512 bytes.
func checkStorageKey(t *testing.T, skey, key string) {
	t.Helper()
	if len(skey) > 512 {
		t.Fatalf("storage key of %d bytes for a key of %d bytes", len(skey), len(key))
	}
	// Redis hashes the bytes between the first '{' and the first '}' after it.
	open := strings.IndexByte(skey, '{')
	end := strings.IndexByte(skey[open+1:], '}')
	if open < 0 || end < 0 {
		t.Fatalf("storage key %q has no hash tag", skey)
	}
	tag := skey[open+1 : open+1+end]
	if want := string(appendTag(nil, key)); tag != want {
		t.Fatalf("storage key %q hashes on %q, want %q", skey, tag, want)
	}
}

func TestStorageKeyBounded(t *testing.T) {
	huge := strings.Repeat("{a}:*", 1<<20/5)
	skey := string(appendStorageKey(nil, sanitizePrefix(strings.Repeat("p", 1000)), algoSpecs[runtime.SlidingLog].tag, huge, huge))
	require.LessOrEqual(t, len(skey), 512)
	checkStorageKey(t, skey, huge)
	require.NotEqual(t, storageKey("n", huge), storageKey("n", huge+"x"))
}

func TestPrefixCannotPickSlot(t *testing.T) {
	p := sanitizePrefix("app{tenant}:")
	require.Equal(t, "app%7Btenant%7D:", p)
	skey := string(appendStorageKey(nil, p, algoSpecs[runtime.SlidingLog].tag, "n", "k"))
	checkStorageKey(t, skey, "k")
	require.NotEqual(t, sanitizePrefix("a%7Bb"), sanitizePrefix("a{b"))
}

func TestSameKeySameSlotAcrossLimits(t *testing.T) {
	// Every limit on one key hashes on the same tag, so several limits can
	// later be decided in one script on one cluster node.
	a := storageKey("PerMinute", "user@example.com")
	b := storageKey("PerDay", "user@example.com")
	tag := func(s string) string { return s[strings.IndexByte(s, '{'):strings.IndexByte(s, '}')] }
	require.Equal(t, tag(a), tag(b))
	require.NotEqual(t, a, b)
}

// TestStorageKeyFormat pins the layout: what Redis holds is found again
// only under the same keys, so a change would reset every limit in use.
func TestStorageKeyFormat(t *testing.T) {
	k := strings.Repeat
	for key, want := range map[string]string{
		"":          "rl:{811c9dc5}sl=3:N.m=0:",
		k("k", 9):   "rl:{96c8cda2}sl=3:N.m=9:" + k("k", 9),
		k("k", 10):  "rl:{271bf36b}sl=3:N.m=10:" + k("k", 10),
		k("k", 100): "rl:{eca34c59}sl=3:N.m=100:" + k("k", 100),
	} {
		require.Equal(t, want, string(appendStorageKey(nil, "rl:", "sl", "N.m", key)))
	}
}
