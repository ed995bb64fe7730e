package memlimit

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// BenchmarkMemoryAllowLongKey measures a key longer than maxLiteralLen,
// which the limiter hashes on every call rather than storing it.
func BenchmarkMemoryAllowLongKey(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			lim := New()
			l := runtime.Limit{Name: "bench", Window: time.Second, Max: 1 << 30, Algorithm: runtime.GCRA}
			key := strings.Repeat("k", size.n)
			ctx := context.Background()
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lim.Allow(ctx, l, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemoryDecide measures a two-limit call on one key.
func BenchmarkMemoryDecide(b *testing.B) {
	lim := New()
	reqs := []runtime.Request{
		{Limit: runtime.Limit{Name: "burst", Window: time.Second, Max: 1 << 30, Algorithm: runtime.GCRA}, Key: "user@example.com"},
		{Limit: runtime.Limit{Name: "daily", Window: 24 * time.Hour, Max: 1 << 30, Algorithm: runtime.FixedWindow}, Key: "user@example.com"},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Decide(ctx, reqs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryAllow measures the hot path: one short key already held,
// admitted every time, from one goroutine and from all of them at once.
func BenchmarkMemoryAllow(b *testing.B) {
	for _, algo := range []runtime.Algorithm{runtime.GCRA, runtime.FixedWindow} {
		l := runtime.Limit{Name: "bench", Window: time.Second, Max: 1 << 30, Algorithm: algo}
		b.Run(string(algo), func(b *testing.B) {
			lim := New()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lim.Allow(ctx, l, "user@example.com"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(algo)+"/parallel", func(b *testing.B) {
			lim := New()
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := lim.Allow(ctx, l, "user@example.com"); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkMemoryAllowNewKeys measures a flood of distinct keys, each
// decided once: every call adds a key, and once the limiter is full, makes
// room for it.
func BenchmarkMemoryAllowNewKeys(b *testing.B) {
	lim := New()
	l := runtime.Limit{Name: "bench", Window: time.Hour, Max: 3}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := lim.Allow(ctx, l, "u"+strconv.Itoa(i)+"@flood.example.com"); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
