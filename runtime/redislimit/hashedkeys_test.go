package redislimit

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// testSecret is a secret of the least length WithHashedKeys accepts.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// personalKeys are keys that must never reach Redis under WithHashedKeys,
// each with the parts of it that would still identify its owner.
var personalKeys = map[string][]string{
	"alice.smith@example.com":               {"alice.smith", "example.com"},
	"2001:db8:85a3::8a2e:370:7334":          {"2001:db8", "8a2e:370:7334"},
	"sk_live_4eC39HqLyjWDarjtT1zdp7dc":      {"sk_live_", "4eC39HqLyjWDarjtT1zdp7dc"},
	"bob@example.org|2001:db8:1234:5678::1": {"bob@example.org", "2001:db8:1234:5678"},
}

// wantHashed is the stored form of key under secret, computed with
// crypto/hmac.
func wantHashed(secret []byte, key string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

func hashedStorageKey(t testing.TB, secret []byte, prefix, algo, name, key string) string {
	t.Helper()
	h, err := newKeyHasher(secret)
	require.NoError(t, err)
	return string(appendHashedStorageKey(nil, h, prefix, algo, name, key))
}

// TestStorageKeyHashedFormat pins the hashed layout, as TestStorageKeyFormat
// pins the clear one, and checks the hash against crypto/hmac for keys and
// secrets of every length class: a secret longer than a SHA-256 block is
// hashed first, and a key longer than the stack buffer is hashed from the
// heap.
func TestStorageKeyHashedFormat(t *testing.T) {
	require.Equal(t, "rl:{7f9fcc53}sl=3:N.m~xU4CDt0VYNE50GuPXBhc1w",
		hashedStorageKey(t, testSecret, "rl:", "sl", "N.m", "alice.smith@example.com"))
	doc, err := os.ReadFile("../../docs/redis.md")
	require.NoError(t, err)
	require.Contains(t, string(doc), "`"+hashedStorageKey(t, testSecret, defaultPrefix, "sl", "Notifier.SendCode", "a@example.com")+"`",
		"docs/redis.md shows another stored key")

	long := []byte(strings.Repeat("s", 100))
	for _, secret := range [][]byte{testSecret, long, append(testSecret, 0, 0xff)} {
		for _, key := range []string{"", "k", strings.Repeat("k", 192), strings.Repeat("k", 193), strings.Repeat("{k}", 1<<12)} {
			hk := wantHashed(secret, key)
			require.Len(t, hk, hashedKeyLen)
			skey := hashedStorageKey(t, secret, "rl:", "sl", "N.m", key)
			require.Equal(t, "rl:{"+string(appendTag(nil, hk))+"}sl=3:N.m~"+hk, skey)
			checkStorageKey(t, skey, hk)
		}
	}
	// The marker keeps a hashed key apart from a clear key of the same
	// bytes, should two services share a prefix.
	hk := wantHashed(testSecret, "k")
	require.NotEqual(t, string(appendStorageKey(nil, "rl:", "sl", "N.m", hk)), hashedStorageKey(t, testSecret, "rl:", "sl", "N.m", "k"))
	require.NotEqual(t, hashedStorageKey(t, testSecret, "rl:", "sl", "N.m", "k"), hashedStorageKey(t, long, "rl:", "sl", "N.m", "k"))
}

// TestStorageKeyHashedSecret checks that a secret shorter than 32 bytes
// stops New, with an error that does not hold the secret, and that the
// option keeps its own copy.
func TestStorageKeyHashedSecret(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	for _, secret := range [][]byte{nil, {}, []byte("hunter2"), testSecret[:31]} {
		func() {
			defer func() {
				err, ok := recover().(error)
				require.True(t, ok, "New accepted a secret of %d bytes", len(secret))
				require.Equal(t, fmt.Sprintf("redislimit: WithHashedKeys needs a secret of at least 32 bytes, got %d", len(secret)), err.Error())
			}()
			New(client, WithHashedKeys(secret))
		}()
	}

	secret := append([]byte(nil), testSecret...)
	lim := New(client, WithHashedKeys(secret))
	clear(secret)
	l := runtime.Limit{Name: "N.m", Window: time.Second, Max: 1}
	require.Equal(t, hashedStorageKey(t, testSecret, defaultPrefix, "sl", "N.m", "k"), lim.storageKey(l, "k"))
}

// TestStorageKeyHashedAllocs checks that hashing keeps a storage key to its
// one allocation, the string itself, as without it.
func TestStorageKeyHashedAllocs(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Second, Max: 1}
	for _, lim := range []*Limiter{New(client), New(client, WithHashedKeys(testSecret))} {
		require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = lim.storageKey(l, "alice.smith@example.com") }))
	}
}

// slotOfKey returns the part of lim's storage keys for key that picks
// their cluster slot, whatever the limit: the order in which a call's
// slots are decided.
func slotOfKey(lim *Limiter, key string) string {
	return lim.slotOf(lim.storageKey(runtime.Limit{Name: "any", Window: time.Second, Max: 1}, key))
}

// monitor records what a real server's MONITOR prints, over a connection
// of its own.
type monitor struct {
	conn net.Conn
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func startMonitor(t *testing.T, addr string) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	m := &monitor{conn: conn, done: make(chan struct{})}
	t.Cleanup(func() { _ = conn.Close(); <-m.done })
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	rd := bufio.NewReader(conn)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", line)
	go func() {
		defer close(m.done)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			m.mu.Lock()
			m.out.WriteString(line)
			m.mu.Unlock()
		}
	}()
	return m
}

// until returns what MONITOR printed up to and including a command that
// echoes mark, once it has arrived.
func (m *monitor) until(t *testing.T, client redis.UniversalClient, mark string) string {
	t.Helper()
	require.NoError(t, client.Echo(ctx, mark).Err())
	var out string
	require.Eventually(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		out = m.out.String()
		return strings.Contains(out, mark)
	}, 30*time.Second, time.Millisecond)
	return out
}

// redisViews decides calls on every key of personalKeys on a real server,
// through a limiter made with opts, and returns what an operator of that
// server can read: SCAN's keys, SLOWLOG GET's commands (every command is
// slow), MONITOR's and the RDB file. The calls cover the script's paths: a
// lone call, calls batched together, a several-limit call in one script,
// and, on a Ring, several-limit calls across hash tags that refund.
func redisViews(t *testing.T, opts ...Option) map[string]string {
	srv := redistest.StartServer(t, redistest.WithArgs("--slowlog-log-slower-than", "0", "--slowlog-max-len", "100000", "--rdbcompression", "no"))
	client := srv.Client(t)
	mon := startMonitor(t, srv.Addr())
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": srv.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })

	opts = append([]Option{WithFailurePolicy(FailClosed), WithTimeout(10 * time.Second)}, opts...)
	lim := New(client, opts...)
	onRing := New(ring, opts...)
	one := runtime.Limit{Name: "views.one", Window: time.Hour, Max: 2}
	two := runtime.Limit{Name: "views.two", Window: time.Hour, Max: 3, Algorithm: runtime.GCRA}
	var keys []string
	for key := range personalKeys {
		keys = append(keys, key)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*len(keys))
	for _, key := range keys {
		for range 3 {
			wg.Go(func() {
				_, err := lim.Allow(ctx, one, key)
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Lone calls, whose keys SLOWLOG keeps whole (it keeps 32 arguments
	// of a command).
	for _, key := range keys {
		ds, err := lim.Decide(ctx, runtime.Request{Limit: two, Key: key}, runtime.Request{Limit: one, Key: keys[0]})
		require.NoError(t, err)
		require.Len(t, ds.Each, 2)
	}

	// On the Ring, a call whose later tag denies refunds the earlier one.
	first, second := keys[0], keys[1]
	if slotOfKey(onRing, first) > slotOfKey(onRing, second) {
		first, second = second, first
	}
	full := runtime.Limit{Name: "views.full", Window: time.Hour, Max: 1}
	wide := runtime.Limit{Name: "views.wide", Window: time.Hour, Max: 5}
	_, err := onRing.Allow(ctx, full, second)
	require.NoError(t, err)
	ds, err := onRing.Decide(ctx, runtime.Request{Limit: wide, Key: first}, runtime.Request{Limit: full, Key: second})
	require.NoError(t, err)
	require.False(t, ds.Allowed)

	views := map[string]string{"MONITOR": mon.until(t, client, "views-done")}
	require.Contains(t, views["MONITOR"], "}settle:", "no refund ran")
	var scanned []string
	iter := client.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		scanned = append(scanned, iter.Val())
	}
	require.NoError(t, iter.Err())
	require.NotEmpty(t, scanned)
	views["SCAN"] = strings.Join(scanned, "\n")
	slow, err := client.Do(ctx, "slowlog", "get", "-1").Result()
	require.NoError(t, err)
	views["SLOWLOG"] = fmt.Sprint(slow)
	require.Contains(t, views["SLOWLOG"], "views.one")
	require.NoError(t, client.Save(ctx).Err())
	rdb, err := os.ReadFile(filepath.Join(srv.Dir(), "dump.rdb"))
	require.NoError(t, err)
	views["RDB"] = string(rdb)
	return views
}

// TestStorageKeyHashedNotInRedis decides calls on personal keys with and
// without WithHashedKeys and reads the server as its operator can: with
// hashing, no key nor any recognisable part of one appears in SCAN,
// SLOWLOG, MONITOR or the RDB file; without it, every key appears in each.
func TestStorageKeyHashedNotInRedis(t *testing.T) {
	t.Run("hashed", func(t *testing.T) {
		views := redisViews(t, WithHashedKeys(testSecret))
		for view, text := range views {
			for key := range personalKeys {
				requireNoPart(t, view, text)
				if !strings.Contains(text, wantHashed(testSecret, key)) {
					t.Errorf("%s does not show the hashed key of %q", view, key)
				}
			}
		}
	})
	t.Run("clear", func(t *testing.T) {
		views := redisViews(t)
		for view, text := range views {
			for key := range personalKeys {
				if !strings.Contains(text, key) {
					t.Errorf("%s does not show the key %q", view, key)
				}
			}
		}
	})
}

// requireNoPart fails if text, what view shows, holds any personal key or
// a part of one, quoting where.
func requireNoPart(t *testing.T, view, text string) {
	t.Helper()
	for key, parts := range personalKeys {
		for _, part := range append(parts, key) {
			if i := strings.Index(text, part); i >= 0 {
				t.Errorf("%s shows %q, of the key %q: ...%q...", view, part, key, text[max(0, i-80):min(len(text), i+len(part)+20)])
			}
		}
	}
}

// TestStorageKeyHashedExact checks on a real server that hashed keys are
// limited exactly, with every algorithm and with several limits in one
// call, that limiters with the same secret share counts, and that another
// secret or none starts counts of its own.
func TestStorageKeyHashedExact(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	clock := newFakeClock()
	limiter := func(opts ...Option) *Limiter {
		return New(client, append([]Option{WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10 * time.Second)}, opts...)...)
	}
	lim := limiter(WithHashedKeys(testSecret))

	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			l := runtime.Limit{Name: "hashed.exact." + string(algo), Window: time.Hour, Max: 5, Algorithm: algo}
			for key := range personalKeys {
				requireAdmits(t, lim, l, key, 5)
				n, err := client.Exists(ctx, lim.storageKey(l, key)).Result()
				require.NoError(t, err)
				require.Equal(t, int64(1), n, "no count at the hashed key")
			}
		})
	}

	t.Run("several limits", func(t *testing.T) {
		email, apiKey := "alice.smith@example.com", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
		perKey := runtime.Limit{Name: "hashed.multi.key", Window: time.Hour, Max: 3}
		perPair := runtime.Limit{Name: "hashed.multi.pair", Window: time.Hour, Max: 2, Algorithm: runtime.TokenBucket}
		call := []runtime.Request{{Limit: perKey, Key: email}, {Limit: perPair, Key: email}, {Limit: perKey, Key: apiKey}}
		for i := range 3 {
			ds, err := lim.Decide(ctx, call...)
			require.NoError(t, err)
			require.Equal(t, i < 2, ds.Allowed, "call %d", i)
		}
		// The denied call recorded nothing: each key has one admission of
		// perKey left.
		requireAdmits(t, lim, perKey, email, 1)
		requireAdmits(t, lim, perKey, apiKey, 1)
	})

	t.Run("instances share counts by secret", func(t *testing.T) {
		l := runtime.Limit{Name: "hashed.shared", Window: time.Hour, Max: 2}
		key := "alice.smith@example.com"
		requireAdmits(t, lim, l, key, 2)
		requireAdmits(t, limiter(WithHashedKeys(testSecret)), l, key, 0)
		requireAdmits(t, limiter(WithHashedKeys([]byte(strings.Repeat("x", 32)))), l, key, 2)
		requireAdmits(t, limiter(), l, key, 2)
	})
}

// requireAdmits asserts that lim admits exactly n calls of l on key, and
// then denies.
func requireAdmits(t *testing.T, lim *Limiter, l runtime.Limit, key string, n int) {
	t.Helper()
	for i := range n + 1 {
		d, err := lim.Allow(ctx, l, key)
		require.NoError(t, err)
		require.Equal(t, i < n, d.Allowed, "call %d of %s, want %d admitted", i, l.Name, n)
	}
}

// TestStorageKeyHashedCluster runs hashed keys on a real Redis Cluster:
// each key is limited exactly, the limits on one key share a slot, and a
// call whose limits span slots admits all or nothing, refunding the
// earlier slot when a later one denies. No personal key reaches any node.
func TestStorageKeyHashedCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	client := c.Client(t)
	events := &degradedLog{}
	clock := newFakeClock()
	lim := New(client, WithHashedKeys(testSecret), WithClock(clock.Now), WithFailurePolicy(FailClosed),
		WithTimeout(10*time.Second), WithOnDegraded(events.record))

	slots := map[int]bool{}
	for key := range personalKeys {
		slot := -1
		for _, algo := range runtime.Algorithms() {
			l := runtime.Limit{Name: "hashed.cluster." + string(algo), Window: time.Hour, Max: 3, Algorithm: algo}
			requireAdmits(t, lim, l, key, 3)
			s := c.KeySlot(t, lim.storageKey(l, key))
			require.True(t, slot < 0 || s == slot, "the limits on %q are on two slots", key)
			slot = s
		}
		slots[slot] = true
	}
	require.Len(t, slots, len(personalKeys), "the keys share slots")

	// A call on two keys on two slots, the later of which fills first.
	first, second := "alice.smith@example.com", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	if slotOfKey(lim, first) > slotOfKey(lim, second) {
		first, second = second, first
	}
	wide := runtime.Limit{Name: "hashed.cluster.wide", Window: time.Hour, Max: 5}
	narrow := runtime.Limit{Name: "hashed.cluster.narrow", Window: time.Hour, Max: 2}
	call := []runtime.Request{{Limit: wide, Key: first}, {Limit: narrow, Key: second}}
	for i := range 4 {
		ds, err := lim.Decide(ctx, call...)
		require.NoError(t, err)
		require.Equal(t, i < 2, ds.Allowed, "call %d", i)
	}
	// The two denied calls' admissions on the first slot were refunded.
	requireAdmits(t, lim, wide, first, 3)
	require.Zero(t, events.len(), "Redis did not decide every call")

	stored := 0
	for _, m := range c.Masters() {
		keys, err := m.Client(t).Keys(ctx, "*").Result()
		require.NoError(t, err)
		stored += len(keys)
		requireNoPart(t, m.String(), strings.Join(keys, "\n"))
	}
	require.NotZero(t, stored)
}

// The benchmarks below are BenchmarkRedisAllow and
// BenchmarkRedisAllowParallel with hashed keys, to be run beside them.

func BenchmarkRedisAllowHashedKeys(b *testing.B) {
	srv := redistest.StartServer(b)
	lim := New(srv.Client(b), WithFailurePolicy(FailClosed), WithTimeout(5*time.Second), WithHashedKeys(testSecret))
	l := runtime.Limit{Name: "bench", Window: time.Second, Max: 100}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := lim.Allow(ctx, l, strconv.Itoa(i%1024)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkRedisAllowParallelHashedKeys(b *testing.B) {
	srv := redistest.StartServer(b)
	lim := New(srv.Client(b), WithFailurePolicy(FailClosed), WithTimeout(5*time.Second), WithHashedKeys(testSecret))
	l := runtime.Limit{Name: "bench", Window: time.Second, Max: 100, Algorithm: runtime.GCRA}
	b.ReportAllocs()
	allowParallel(b, lim, l)
}

// BenchmarkStorageKey measures building one storage key, the whole of what
// hashing adds to a decision.
func BenchmarkStorageKey(b *testing.B) {
	l := runtime.Limit{Name: "Notifier.SendCode", Window: time.Second, Max: 1}
	for _, hashed := range []bool{false, true} {
		b.Run(fmt.Sprintf("hashed=%v", hashed), func(b *testing.B) {
			lim := &Limiter{cfg: newConfig(nil)}
			if hashed {
				lim.cfg = newConfig([]Option{WithHashedKeys(testSecret)})
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = lim.storageKey(l, "alice.smith@example.com")
			}
		})
	}
}
