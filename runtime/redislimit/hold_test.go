package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratelimitgen/ratelimitgen/internal/redistest"
	"github.com/ratelimitgen/ratelimitgen/runtime"
	"github.com/ratelimitgen/ratelimitgen/runtime/memlimit"
)

// settleModel is a plain model of one key under one limit, as the
// algorithms state them with holds (runtime.Hold): decide, give back d
// units of an admission by its receipt, charge e units more, and reset.
// Times are µs on the test's clock, which never goes back.
type settleModel struct {
	algo   runtime.Algorithm
	window int64 // µs
	max    int64
	burst  int64

	// SlidingLog: the entries' times, oldest first.
	log []int64
	// SlidingWindow: the buckets' counts by index.
	buckets map[int64]int64
	// FixedWindow: the stored window and its count; have says a state is
	// stored (for TokenBucket and GCRA too).
	fw, fn int64
	have   bool
	// TokenBucket: the level in 1/window tokens at time at.
	level, at int64
	// GCRA: the theoretical arrival time.
	tat int64
}

func newSettleModel(l runtime.Limit) *settleModel {
	m := &settleModel{algo: algorithmOf(l), window: l.Window.Microseconds(), max: int64(l.Max), burst: int64(l.Burst)}
	if m.burst == 0 {
		m.burst = m.max
	}
	m.buckets = map[int64]int64{}
	return m
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (m *settleModel) interval() int64 { return (m.window + m.max - 1) / m.max }
func (m *settleModel) bucket() int64   { return (m.window + 9) / 10 }

// counted returns the entries of the sliding log that count at now.
func (m *settleModel) counted(now int64) int64 {
	n := int64(0)
	for _, e := range m.log {
		if e > now-m.window {
			n++
		}
	}
	return n
}

// room returns whether a call of cost c has room at now, and the
// remaining a check reports (before recording).
func (m *settleModel) room(now, c int64) (bool, int64) {
	var rem int64
	switch m.algo {
	case runtime.SlidingLog:
		rem = m.max - m.counted(now)
	case runtime.SlidingWindow:
		cur := floorDiv(now, m.bucket())
		count := int64(0)
		for j, n := range m.buckets {
			if j >= cur-10 {
				count += n
			}
		}
		rem = m.max - count
	case runtime.FixedWindow:
		count := int64(0)
		if m.have && m.fw >= floorDiv(now, m.window) {
			count = m.fn
		}
		rem = m.max - count
	case runtime.TokenBucket:
		l := m.refilled(now)
		ok := l >= c*m.window
		rem = floorDiv(l, m.window)
		if !ok {
			return false, max(rem, 0)
		}
		return true, rem
	case runtime.GCRA:
		tat := now
		if m.have {
			tat = max(m.tat, now)
		}
		i := m.interval()
		ok := tat+c*i-now <= m.burst*i
		rem = floorDiv(m.burst*i-(tat-now), i)
		if !ok {
			return false, max(rem, 0)
		}
		return true, rem
	}
	if rem-c < 0 {
		return false, max(rem, 0)
	}
	return true, rem
}

// refilled returns the token bucket's level refilled to now.
func (m *settleModel) refilled(now int64) int64 {
	top := m.burst * m.window
	if !m.have {
		return top
	}
	if now > m.at {
		return min(top, m.level+(now-m.at)*m.max)
	}
	return m.level
}

// record records c units at now, room or none, and returns the receipt.
func (m *settleModel) record(now, c int64) int64 {
	switch m.algo {
	case runtime.SlidingLog:
		t := now
		if n := len(m.log); n > 0 && m.log[n-1] >= t {
			t = m.log[n-1] + 1
		}
		for range c {
			m.log = append(m.log, t)
		}
		return t
	case runtime.SlidingWindow:
		cur := floorDiv(now, m.bucket())
		m.buckets[cur] += c
		return cur
	case runtime.FixedWindow:
		w := floorDiv(now, m.window)
		if m.have && m.fw >= w {
			m.fn += c
		} else {
			m.fw, m.fn = w, c
		}
		m.have = true
		return m.fw
	case runtime.TokenBucket:
		m.level = m.refilled(now) - c*m.window
		m.at = max(m.at, now)
		if !m.have {
			m.at = now
		}
		m.have = true
	case runtime.GCRA:
		tat := now
		if m.have {
			tat = max(m.tat, now)
		}
		m.tat, m.have = tat+c*m.interval(), true
	}
	return 0
}

// giveBack gives back d units of the admission of receipt r at now.
func (m *settleModel) giveBack(now, r, d int64) {
	switch m.algo {
	case runtime.SlidingLog:
		if r <= now-m.window {
			return
		}
		out := m.log[:0]
		for _, e := range m.log {
			if e == r && d > 0 {
				d--
				continue
			}
			out = append(out, e)
		}
		m.log = out
	case runtime.SlidingWindow:
		if r < floorDiv(now, m.bucket())-10 {
			return
		}
		m.buckets[r] -= min(m.buckets[r], d)
	case runtime.FixedWindow:
		if m.have && m.fw == r && r >= floorDiv(now, m.window) {
			m.fn -= min(m.fn, d)
		}
	case runtime.TokenBucket:
		if m.have {
			m.level = min(m.burst*m.window, m.level+d*m.window)
		}
	case runtime.GCRA:
		if m.have && m.tat > now {
			m.tat = max(now, m.tat-d*m.interval())
		}
	}
}

func (m *settleModel) reset() {
	m.log, m.buckets, m.have = nil, map[int64]int64{}, false
}

// modelHold is an admitted call the history may settle.
type modelHold struct {
	hold     runtime.Hold
	cost     int64
	receipt  int64
	admitted int64 // µs
}

// TestHoldSettleModel runs random histories of holds, settles (down to 0,
// up past the capacity), peeks, resets and clock steps against one key of
// each algorithm, and requires every decision to be the model's: whether
// it is admitted and the Remaining it reports. A fixed-window audit also
// counts, per window, the units admitted there against Max and what was
// charged there.
func TestHoldSettleModel(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	for _, algo := range runtime.Algorithms() {
		for _, lmax := range []int{6, 150} {
			t.Run(fmt.Sprintf("%s/max%d", algo, lmax), func(t *testing.T) {
				seed := uint64(time.Now().UnixNano())
				t.Logf("seed %d", seed)
				rng := rand.New(rand.NewPCG(seed, uint64(lmax)))
				clock := newFakeClock()
				lim := New(client, WithClock(clock.Now), WithPrefix("hold:"+t.Name()+":"),
					WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
				l := runtime.Limit{Name: "hold", Window: time.Minute, Max: lmax, Algorithm: algo}
				if algo == runtime.TokenBucket || algo == runtime.GCRA {
					l.Burst = lmax - 1
				}
				capacity := int64(l.Capacity())
				m := newSettleModel(l)
				var (
					pending []modelHold
					trail   []string
					// counts of what the history did, for its log.
					admitted, denied, down, up, peeks, resets int
				)
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("%s\nhistory:\n%s", fmt.Sprintf(format, args...), strings.Join(trail[len(trail)-min(len(trail), 30):], "\n"))
				}
				// The fixed-window audit: per window, the units admitted
				// there (as settled), and the units charged there.
				admittedIn, chargedIn := map[int64]int64{}, map[int64]int64{}
				cost := func() int64 {
					if rng.IntN(4) == 0 {
						return 1 + rng.Int64N(capacity)
					}
					return 1 + rng.Int64N(min(capacity, 3))
				}
				for step := range 600 {
					now := clock.Now().UnixMicro()
					switch op := rng.IntN(10); {
					case op < 4: // hold
						c := cost()
						ds, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k", Cost: c})
						if err != nil {
							fail("step %d: hold: %v", step, err)
						}
						ok, rem := m.room(now, c)
						trail = append(trail, fmt.Sprintf("%d: t=%d hold %d -> %v %d (model %v %d)", step, now, c, ds.Allowed, ds.Each[0].Remaining, ok, rem))
						if ds.Allowed != ok || (h == nil) == ok {
							fail("step %d: hold of %d admitted %v, the model says %v", step, c, ds.Allowed, ok)
						}
						if ds.Source == runtime.SourceStore {
							if ok {
								rem -= c
							}
							if int64(ds.Each[0].Remaining) != rem {
								fail("step %d: hold of %d has Remaining %d, the model %d", step, c, ds.Each[0].Remaining, rem)
							}
						}
						if !ok {
							denied++
						}
						if ok {
							admitted++
							r := m.record(now, c)
							pending = append(pending, modelHold{hold: h, cost: c, receipt: r, admitted: now})
							if algo == runtime.FixedWindow {
								w := floorDiv(now, m.window)
								admittedIn[w] += c
								if admittedIn[w] > int64(l.Max)+chargedIn[w] {
									fail("step %d: window %d holds %d units, above Max %d and %d charged", step, w, admittedIn[w], l.Max, chargedIn[w])
								}
							}
						}
					case op < 7 && len(pending) > 0: // settle
						i := rng.IntN(len(pending))
						p := pending[i]
						pending = slices.Delete(pending, i, i+1)
						var used int64
						switch rng.IntN(5) {
						case 0:
							used = 0
						case 1:
							used = p.cost
						case 2:
							used = capacity + 1 + rng.Int64N(5)
						default:
							used = rng.Int64N(capacity + 1)
						}
						if err := p.hold.Settle(ctx, used); err != nil {
							fail("step %d: settle: %v", step, err)
						}
						if err := p.hold.Settle(ctx, used); !errors.Is(err, runtime.ErrSettled) {
							fail("step %d: a second settle returned %v, not ErrSettled", step, err)
						}
						u := min(used, capacity)
						trail = append(trail, fmt.Sprintf("%d: t=%d settle cost %d receipt %d at %d", step, now, p.cost, p.receipt, used))
						switch {
						case u < p.cost:
							down++
							m.giveBack(now, p.receipt, p.cost-u)
							if algo == runtime.FixedWindow && p.receipt == floorDiv(now, m.window) {
								admittedIn[p.receipt] -= min(admittedIn[p.receipt], p.cost-u)
							}
						case u > p.cost:
							up++
							m.record(now, u-p.cost)
							if algo == runtime.FixedWindow {
								w := max(floorDiv(now, m.window), m.fw)
								chargedIn[w] += u - p.cost
								admittedIn[w] += u - p.cost
							}
						}
					case op < 8: // peek
						c := cost()
						ds, err := lim.Peek(ctx, runtime.Request{Limit: l, Key: "k", Cost: c})
						if err != nil {
							fail("step %d: peek: %v", step, err)
						}
						peeks++
						ok, rem := m.room(now, c)
						trail = append(trail, fmt.Sprintf("%d: t=%d peek %d -> %v %d (model %v %d)", step, now, c, ds.Allowed, ds.Each[0].Remaining, ok, rem))
						if ds.Allowed != ok || int64(ds.Each[0].Remaining) != rem {
							fail("step %d: peek of %d says %v, %d; the model %v, %d", step, c, ds.Allowed, ds.Each[0].Remaining, ok, rem)
						}
					case op < 9 && rng.IntN(4) == 0: // reset
						if err := lim.Reset(ctx, runtime.Request{Limit: l, Key: "k"}); err != nil {
							fail("step %d: reset: %v", step, err)
						}
						trail = append(trail, fmt.Sprintf("%d: t=%d reset", step, now))
						resets++
						m.reset()
						clear(admittedIn)
						clear(chargedIn)
					default: // the clock
						var d time.Duration
						switch rng.IntN(4) {
						case 0:
						case 1:
							d = us(1 + rng.Int64N(10))
						case 2:
							d = time.Duration(rng.Int64N(int64(l.Window / 5)))
						default:
							d = time.Duration(rng.Int64N(int64(l.Window * 3 / 2)))
						}
						clock.Advance(d)
						trail = append(trail, fmt.Sprintf("%d: advance %v", step, d))
					}
				}
				t.Logf("%d admitted, %d denied, %d settled down, %d up, %d peeks, %d resets", admitted, denied, down, up, peeks, resets)
				require.Positive(t, denied, "the history must reach the limit")
				require.Positive(t, down*up, "the history must settle both ways")
			})
		}
	}
}

// TestSettleAppliesOnce drops the reply of every settle after Redis ran
// it, so that go-redis resends it: each must apply once. A limit held to
// its Max and settled at 0 gives back every unit once; twice would make
// room for more than Max, so the next calls find exactly Max.
func TestSettleAppliesOnce(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	pclient := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { _ = pclient.Close() })
	for _, algo := range runtime.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			clock := newFakeClock()
			lim := New(pclient, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
			l := runtime.Limit{Name: "settle.once." + string(algo), Window: time.Hour, Max: 6, Algorithm: algo}
			req := runtime.Request{Limit: l, Key: "k", Cost: 2}
			var holds []runtime.Hold
			for range 3 {
				ds, h, err := lim.Hold(ctx, req)
				require.NoError(t, err)
				require.True(t, ds.Allowed)
				holds = append(holds, h)
			}
			droppedBefore, settlesBefore := proxy.Dropped(), proxy.Requests(isRefund)
			// Down one: 1 of 2 given back; up: 1 more charged; down to 0.
			for i, used := range []int64{1, 3, 0} {
				proxy.DropReplies(1, isRefund)
				require.NoError(t, holds[i].Settle(ctx, used), "a lost reply is resent by the client")
			}
			require.Equal(t, 3, proxy.Dropped()-droppedBefore, "every settle's reply was dropped")
			require.Equal(t, 6, proxy.Requests(isRefund)-settlesBefore, "go-redis resent every settle once, or this test shows nothing")

			// 6 - (1 + 3 + 0) = 2 units left, whatever the algorithm.
			ds, err := lim.Peek(ctx, runtime.Request{Limit: l, Key: "k"})
			require.NoError(t, err)
			require.Equal(t, 2, ds.Each[0].Remaining, "each settle applied exactly once")
		})
	}
}

// TestHoldCluster holds and settles calls on a Redis Cluster whose limits
// are on several slots, and peeks and resets them, with clear and hashed
// keys.
func TestHoldCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	client := c.Client(t)
	for _, hashed := range []bool{false, true} {
		t.Run(fmt.Sprintf("hashed=%v", hashed), func(t *testing.T) {
			clock := newFakeClock()
			opts := []Option{WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10 * time.Second), WithPrefix(fmt.Sprintf("holdc%v:", hashed))}
			if hashed {
				opts = append(opts, WithHashedKeys([]byte(strings.Repeat("s", minSecretLen))))
			}
			lim := New(client, opts...)
			var reqs []runtime.Request
			slots := map[int]bool{}
			for i, algo := range runtime.Algorithms() {
				key := fmt.Sprintf("user-%d", i)
				l := runtime.Limit{Name: "hold.cluster", Window: time.Hour, Max: 10, Algorithm: algo}
				reqs = append(reqs, runtime.Request{Limit: l, Key: key, Cost: 4})
				slots[c.KeySlot(t, lim.storageKey(l, key))] = true
			}
			require.Greater(t, len(slots), 1, "the call spans slots")

			ds, h, err := lim.Hold(ctx, reqs...)
			require.NoError(t, err)
			require.True(t, ds.Allowed)
			// Each limit settled differently: 0, 1, 4, 7, 10.
			used := []int64{0, 1, 4, 7, 10}
			require.Error(t, h.Settle(ctx, used[:4]...), "one used value per limit")
			require.Error(t, h.Settle(ctx, 0, 0, 0, 0, -1), "no used value below 0")
			require.NoError(t, h.Settle(ctx, used...), "a settle refused as invalid is not the first")
			require.ErrorIs(t, h.Settle(ctx, used...), runtime.ErrSettled)

			peeked, err := lim.Peek(ctx, reqs...)
			require.NoError(t, err)
			for i, d := range peeked.Each {
				require.Equal(t, 10-int(used[i]), d.Remaining, "limit %s after its settle at %d", reqs[i].Limit.Algorithm, used[i])
			}
			require.False(t, peeked.Allowed, "the limit settled at 10 has no room for 4")

			require.NoError(t, lim.Reset(ctx, reqs...))
			peeked, err = lim.Peek(ctx, reqs...)
			require.NoError(t, err)
			require.True(t, peeked.Allowed)
			for i, d := range peeked.Each {
				require.Equal(t, 10, d.Remaining, "limit %s after the reset", reqs[i].Limit.Algorithm)
			}
		})
	}
}

// TestHoldFallback holds a call while Redis is down under FailLocal: the
// fallback decides it, and settling it settles in the fallback's Hold.
func TestHoldFallback(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	mem := &memHolder{Limiter: memlimit.New()}
	lim := New(client, WithFallback(mem), WithInstances(1), WithTimeout(time.Second))
	l := runtime.Limit{Name: "hold.fallback", Window: time.Hour, Max: 5}
	srv.Stop(t)

	ds, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k", Cost: 3})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.Equal(t, runtime.SourceFallback, ds.Source)
	require.NoError(t, h.Settle(ctx, 1))
	require.Equal(t, [][]int64{{1}}, mem.settled(), "the fallback's Hold settled the call")
	require.ErrorIs(t, h.Settle(ctx, 1), runtime.ErrSettled)
}

// TestSettleRedisDown settles a call Redis admitted once the limiter can
// no longer reach Redis (its client closed): the error matches
// runtime.ErrUnavailable, the settle was the first, and the reservation
// stays counted.
func TestSettleRedisDown(t *testing.T) {
	srv := redistest.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(time.Second))
	l := runtime.Limit{Name: "hold.down", Window: time.Hour, Max: 5}
	_, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k", Cost: 3})
	require.NoError(t, err)
	require.NoError(t, client.Close())
	err = h.Settle(ctx, 0)
	require.ErrorIs(t, err, runtime.ErrUnavailable)
	require.ErrorIs(t, h.Settle(ctx, 0), runtime.ErrSettled, "a failed settle was the first")
	require.Error(t, h.Settle(ctx, 1, 2), "a wrong count of used values")

	ds, err := New(srv.Client(t)).Peek(ctx, runtime.Request{Limit: l, Key: "k"})
	require.NoError(t, err)
	require.Equal(t, 2, ds.Each[0].Remaining, "the reservation stays counted")
}

// TestSettleWhileBreakerOpen settles a call Redis admitted after a later
// decision found Redis gone and opened the breaker: the settle fails at
// once with ErrCircuitOpen, without asking Redis, and stays the first.
func TestSettleWhileBreakerOpen(t *testing.T) {
	srv := redistest.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	lim := New(client, WithFailurePolicy(FailClosed), WithTimeout(time.Second), WithRetryInterval(time.Hour))
	l := runtime.Limit{Name: "hold.open", Window: time.Hour, Max: 5}
	_, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k", Cost: 3})
	require.NoError(t, err)
	require.NoError(t, client.Close())
	_, err = lim.Decide(ctx, runtime.Request{Limit: l, Key: "other"})
	require.ErrorIs(t, err, runtime.ErrUnavailable, "Redis is gone")
	err = h.Settle(ctx, 0)
	require.ErrorIs(t, err, ErrCircuitOpen)
	require.ErrorIs(t, err, runtime.ErrUnavailable)
	require.ErrorIs(t, h.Settle(ctx, 0), runtime.ErrSettled, "a failed settle was the first")
}

// memHolder is an in-memory fallback that holds calls, recording how they
// are settled: memlimit decides them.
type memHolder struct {
	*memlimit.Limiter
	mu    sync.Mutex
	uses  [][]int64
	holds int
}

func (m *memHolder) Hold(ctx context.Context, reqs ...runtime.Request) (runtime.Decisions, runtime.Hold, error) {
	ds, err := m.Decide(ctx, reqs...)
	if err != nil || !ds.Allowed {
		return ds, nil, err
	}
	m.mu.Lock()
	m.holds++
	m.mu.Unlock()
	return ds, memHold{m}, nil
}

func (m *memHolder) settled() [][]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.uses)
}

type memHold struct{ m *memHolder }

func (h memHold) Settle(_ context.Context, used ...int64) error {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.m.uses = append(h.m.uses, slices.Clone(used))
	return nil
}

// TestHoldConcurrent holds and settles calls from many goroutines at once,
// so that they share batches (a single server) or go slot by slot (a Ring
// of two shards, each call on two keys of different shards), every one
// admitted; the limits then count exactly the units the calls used.
func TestHoldConcurrent(t *testing.T) {
	one := redistest.StartServer(t)
	a, b := redistest.StartServer(t), redistest.StartServer(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr(), "b": b.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	first, second := keysInTagOrder()
	for _, topo := range []struct {
		name   string
		client redis.UniversalClient
		keys   []string
	}{{"server", one.Client(t), []string{"k"}}, {"ring", ring, []string{first, second}}} {
		for _, algo := range runtime.Algorithms() {
			t.Run(topo.name+"/"+string(algo), func(t *testing.T) {
				clock := newFakeClock()
				lim := New(topo.client, WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
				l := runtime.Limit{Name: "hold.many." + string(algo), Window: time.Hour, Max: 1000, Algorithm: algo}
				const goroutines, holds = 32, 4
				var (
					wg   sync.WaitGroup
					mu   sync.Mutex
					used = make([]int64, len(topo.keys))
				)
				for g := range goroutines {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(g), 1))
						for range holds {
							reqs := make([]runtime.Request, len(topo.keys))
							for i, k := range topo.keys {
								reqs[i] = runtime.Request{Limit: l, Key: k, Cost: 3}
							}
							ds, h, err := lim.Hold(ctx, reqs...)
							if err != nil || !ds.Allowed {
								t.Errorf("hold: %+v, %v", ds, err)
								return
							}
							u := make([]int64, len(reqs))
							for i := range u {
								u[i] = rng.Int64N(7)
							}
							if err := h.Settle(ctx, u...); err != nil {
								t.Errorf("settle: %v", err)
								return
							}
							mu.Lock()
							for i := range u {
								used[i] += u[i]
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				for i, k := range topo.keys {
					ds, err := lim.Peek(ctx, runtime.Request{Limit: l, Key: k})
					require.NoError(t, err)
					require.Equal(t, l.Max-int(used[i]), ds.Each[0].Remaining, "key %s counts what its calls used", k)
				}
			})
		}
	}
}

// TestHoldLease holds calls of a hot key that leases, on the test's clock:
// a call a lease admitted gives back to the lease, and charges in Redis.
func TestHoldLease(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim := New(srv.Client(t), WithClock(clock.Now), WithLeases(10*time.Millisecond), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	l := runtime.Limit{Name: "hold.lease", Window: time.Hour, Max: 1 << 20, Algorithm: runtime.FixedWindow}
	req := runtime.Request{Limit: l, Key: "hot", Cost: 3}
	leased := func() *hold {
		for range 1000 {
			ds, h, err := lim.Hold(ctx, req)
			require.NoError(t, err)
			require.True(t, ds.Allowed)
			lim.leases.settle()
			if ds.Source == runtime.SourceLease {
				return h.(*hold)
			}
			require.NoError(t, h.Settle(ctx, 3))
			clock.Advance(time.Millisecond)
		}
		t.Fatal("the key never leased")
		return nil
	}
	h := leased()
	before := h.kept.lease.left.Load()
	require.NoError(t, h.Settle(ctx, 1))
	require.Equal(t, before+2, h.kept.lease.left.Load(), "2 units back to the lease")

	h = leased()
	ds, err := lim.Peek(ctx, req)
	require.NoError(t, err)
	require.NoError(t, h.Settle(ctx, 5))
	after, err := lim.Peek(ctx, req)
	require.NoError(t, err)
	require.Equal(t, ds.Each[0].Remaining-2, after.Each[0].Remaining, "2 units more charged in Redis")

	// A reset deletes the key's state and lease records, and this
	// limiter's leases of it: the next call is Redis's, on a full limit.
	require.NoError(t, lim.Reset(ctx, req))
	n, err := srv.Client(t).Exists(ctx, lim.storageKey(l, "hot"), lim.storageKey(l, "hot")+leaseRecordsSuffix).Result()
	require.NoError(t, err)
	require.Zero(t, n, "the state and lease records are gone")
	ds, err = lim.Peek(ctx, req)
	require.NoError(t, err)
	require.Equal(t, l.Max, ds.Each[0].Remaining)
	// (The key is still hot here, so this call may ask for a lease anew.)
	ds, h2, err := lim.Hold(ctx, req)
	require.NoError(t, err)
	require.Equal(t, runtime.SourceStore, ds.Source, "no lease survives the reset here")
	require.NoError(t, h2.Settle(ctx, 3))
	lim.leases.settle()
}

// TestGiveBackForgetsDenials fills a limit, so that the deny cache
// remembers its denial, then settles a held call down: the next call asks
// Redis, which admits it.
func TestGiveBackForgetsDenials(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim := New(srv.Client(t), WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	for _, algo := range runtime.Algorithms() {
		l := runtime.Limit{Name: "hold.deny." + string(algo), Window: time.Hour, Max: 4, Algorithm: algo}
		req := runtime.Request{Limit: l, Key: "k", Cost: 4}
		_, h, err := lim.Hold(ctx, req)
		require.NoError(t, err)
		for _, source := range []runtime.Source{runtime.SourceStore, runtime.SourceDenyCache} {
			ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k"})
			require.NoError(t, err)
			require.False(t, ds.Allowed)
			require.Equal(t, source, ds.Source, "%s", algo)
		}
		require.NoError(t, h.Settle(ctx, 2))
		ds, err := lim.Decide(ctx, runtime.Request{Limit: l, Key: "k", Cost: 2})
		require.NoError(t, err)
		require.True(t, ds.Allowed, "%s: the 2 units given back admit a call", algo)
		require.Equal(t, runtime.SourceStore, ds.Source)
	}
}

// TestHoldModes settles a call of an enforced limit, a shadow limit with
// room, a shadow limit without room and an off limit: the shadow limit
// without room recorded nothing, so its settle leaves it as it is, and the
// off limit is never asked.
func TestHoldModes(t *testing.T) {
	srv := redistest.StartServer(t)
	clock := newFakeClock()
	lim := New(srv.Client(t), WithClock(clock.Now), WithFailurePolicy(FailClosed), WithTimeout(10*time.Second))
	enforced := runtime.Limit{Name: "modes.enforced", Window: time.Hour, Max: 10, Algorithm: runtime.FixedWindow}
	roomy := runtime.Limit{Name: "modes.roomy", Window: time.Hour, Max: 10, Algorithm: runtime.SlidingLog, Mode: runtime.ModeShadow}
	full := runtime.Limit{Name: "modes.full", Window: time.Hour, Max: 3, Algorithm: runtime.TokenBucket, Mode: runtime.ModeShadow}
	off := runtime.Limit{Name: "modes.off", Window: time.Hour, Max: 3, Mode: runtime.ModeOff}
	ds, err := lim.Decide(ctx, runtime.Request{Limit: full, Key: "k", Cost: 3})
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	fullBefore, err := lim.Peek(ctx, runtime.Request{Limit: full, Key: "k"})
	require.NoError(t, err)

	reqs := []runtime.Request{{Limit: enforced, Key: "k", Cost: 4}, {Limit: roomy, Key: "k", Cost: 4}, {Limit: full, Key: "k", Cost: 1}, {Limit: off, Key: "k", Cost: 1}}
	ds, h, err := lim.Hold(ctx, reqs...)
	require.NoError(t, err)
	require.True(t, ds.Allowed)
	require.False(t, ds.Each[2].Allowed, "the full shadow limit has no room")
	require.NoError(t, h.Settle(ctx, 1, 9, 3, 3))

	peeked, err := lim.Peek(ctx, reqs[:3]...)
	require.NoError(t, err)
	require.Equal(t, 9, peeked.Each[0].Remaining, "enforced: 3 of 4 given back")
	require.Equal(t, 1, peeked.Each[1].Remaining, "shadow with room: 5 more charged")
	require.Equal(t, fullBefore.Each[0], peeked.Each[2], "shadow without room: nothing recorded, nothing settled")
}

// TestSettleBoundedByTimeout settles a call while its Redis is paused: the
// settle gives up within the limiter's timeout, with an error matching
// runtime.ErrUnavailable, however long the caller's context allows.
func TestSettleBoundedByTimeout(t *testing.T) {
	srv := redistest.StartServer(t)
	lim := New(srv.Client(t), WithFailurePolicy(FailClosed), WithTimeout(200*time.Millisecond))
	l := runtime.Limit{Name: "hold.paused", Window: time.Hour, Max: 5}
	_, h, err := lim.Hold(ctx, runtime.Request{Limit: l, Key: "k", Cost: 3})
	require.NoError(t, err)
	srv.Pause(t)
	defer srv.Resume(t)
	require.ErrorIs(t, h.Settle(ctx, 0), runtime.ErrUnavailable)
}
