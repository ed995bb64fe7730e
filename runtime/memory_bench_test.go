package runtime

import (
	"context"
	"strings"
	"testing"
	"time"
)

// BenchmarkMemoryAllowLongKey measures a key longer than maxLiteralLen,
// which the limiter hashes on every call rather than storing it.
func BenchmarkMemoryAllowLongKey(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			lim := NewMemoryLimiter()
			l := Limit{Name: "bench", Window: time.Second, Max: 1 << 30, Algorithm: GCRA}
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
	lim := NewMemoryLimiter()
	reqs := []Request{
		{Limit: Limit{Name: "burst", Window: time.Second, Max: 1 << 30, Algorithm: GCRA}, Key: "user@example.com"},
		{Limit: Limit{Name: "daily", Window: 24 * time.Hour, Max: 1 << 30, Algorithm: FixedWindow}, Key: "user@example.com"},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lim.Decide(ctx, reqs...); err != nil {
			b.Fatal(err)
		}
	}
}
