package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

type cacheOf[V any] struct{}

func (cacheOf[V]) Get(context.Context, string) (V, error) {
	var zero V
	return zero, nil
}

// Cache[int] and Cache[string] count under one name: the generic type's
// limit is the declaration's, whatever the type argument.
func exerciseGeneric(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	ints := NewRateLimitedCache[int](cacheOf[int]{}, lim)
	strs := NewRateLimitedCache[string](cacheOf[string]{}, lim)
	if _, err := ints.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := strs.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	var le *runtime.LimitError
	if _, err := ints.Get(ctx, "k"); !errors.As(err, &le) || le.Limit.Name != here+"Cache.Get" {
		t.Fatalf("third Get of key k across instantiations: got %v, want a denial by %sCache.Get", err, here)
	}
	if _, err := strs.Get(ctx, "other"); err != nil {
		t.Fatalf("another key: %v", err)
	}
}

func TestGenericMemory(t *testing.T) {
	exerciseGeneric(t, memlimit.New())
}

func TestGenericRedis(t *testing.T) {
	exerciseGeneric(t, newRedisLimiter(t))
}
