package e2e

import (
	"context"
	"errors"
	"testing"

	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
	"github.com/ratelimitgen/ratelimitgen/testmod/e2e/shapes"
)

type reads struct{ n int }

func (r *reads) Read(context.Context, string) error   { r.n++; return nil }
func (r *reads) Lookup(context.Context, string) error { return nil }
func (r *reads) Find(context.Context, string) error   { return nil }

type cache[T any] struct{ n int }

func (c *cache[T]) Get(context.Context, string) (T, error) {
	c.n++
	var zero T
	return zero, nil
}
func (c *cache[T]) Forget(context.Context, string) error { return nil }

const shapesPath = "github.com/ratelimitgen/ratelimitgen/testmod/e2e/shapes."

// exerciseAcross makes three calls of a method that a wrapper gets by
// embedding from package shapes, in every shape: the third is denied by
// shapes' limit (max=2), and the wrapped method ran twice.
func exerciseAcross(t *testing.T, lim runtime.Limiter) {
	t.Helper()
	ctx := context.Background()
	auditor, keeper := &shapes.Auditor{}, &shapes.Auditor{}
	pool := &shapes.Pool[int]{}
	store, index, desk := &reads{}, &reads{}, &reads{}
	memo := &cache[string]{}
	for _, c := range []struct {
		name, limit string
		call        func(ctx context.Context, key string) error
		ran         func() int
	}{
		{"Catalog.Read", "Store.Read", NewRateLimitedCatalog(store, lim).Read, func() int { return store.n }},
		{"Shop.Audit", "Auditor.Audit", NewRateLimitedShop(&Shop{auditor}, lim).Audit, func() int { return auditor.N }},
		{"Index.Read", "Store.Read", NewRateLimitedIndex(index, lim).Read, func() int { return index.n }},
		{"Memo.Get", "Cache.Get", func(ctx context.Context, key string) error {
			_, err := NewRateLimitedMemo[string](memo, lim).Get(ctx, key)
			return err
		}, func() int { return memo.n }},
		{"Lot.Take", "Pool.Take", func(ctx context.Context, key string) error {
			_, err := NewRateLimitedLot(&Lot{pool}, lim).Take(ctx, key)
			return err
		}, func() int { return pool.N }},
		{"Desk.Read", "Store.Read", NewRateLimitedDesk(&Desk{&Holder{desk}}, lim).Read, func() int { return desk.n }},
		{"Counter.Audit", "Auditor.Audit", NewRateLimitedCounter(&Counter{&shapes.Keeper{Auditor: keeper}}, lim).Audit, func() int { return keeper.N }},
	} {
		key := c.name // a key of its own: the wrappers of one method share its count
		for n := range 2 {
			if err := c.call(ctx, key); err != nil {
				t.Fatalf("%s %d: %v", c.name, n+1, err)
			}
		}
		var le *runtime.LimitError
		if err := c.call(ctx, key); !errors.As(err, &le) || le.Limit.Name != shapesPath+c.limit {
			t.Fatalf("3rd %s: got %v, want a denial by the limit %s%s", c.name, err, shapesPath, c.limit)
		}
		if got := c.ran(); got != 2 {
			t.Fatalf("%s ran the wrapped method %d times; want 2", c.name, got)
		}
	}
}

func TestEmbedAcrossMemory(t *testing.T) {
	exerciseAcross(t, memlimit.New())
}

func TestEmbedAcrossRedis(t *testing.T) {
	exerciseAcross(t, newRedisLimiter(t))
}
