package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The ceiling is the least a batched Redis rate limiter can do on this
// machine: callers queue their decision, one EVALSHA decides a batch of up
// to ceilingBatch queued calls, at most two batches are in flight, and no
// timer waits for a batch to fill. Its scripts decide on Redis's TIME with
// no validation, no policy and no deny cache. It is bench-only code, there
// to be measured beside ratelimitgen in the same run: what ratelimitgen
// does beyond it (deadlines, policy, the deny cache, Cluster, fallback) is
// what the ratio ours/ceiling costs. Both scripts are still exact, so the
// comparison is between limiters that keep the same promise.

// ceilingBatch is the most calls one script call decides.
const ceilingBatch = 128

// ceilingGCRA: KEYS are the batch's keys, ARGV[1] the emission interval and
// ARGV[2] the window, in µs. A key holds its theoretical arrival time; a
// call is admitted when the new one stays within a window of now, which
// allows Max at once and Max per window after. Times go to Redis through
// string.format: redis.call would turn a Lua number into a string with 14
// significant digits, 100 µs steps at today's clock.
const ceilingGCRA = `
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local interval, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for i, k in ipairs(KEYS) do
  local tat = tonumber(redis.call('GET', k)) or now
  if tat < now then tat = now end
  local new = tat + interval
  if new - now <= window then
    redis.call('SET', k, string.format('%.17g', new), 'PX', math.ceil((new - now) / 1000))
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`

// ceilingSlidingLog: KEYS are the batch's keys, ARGV[1] the window in µs,
// ARGV[2] Max and ARGV[3] a member prefix unique to the batch. A key is a
// ZSET of its admissions in the last window, scored by Redis time: exact,
// like ratelimitgen's sliding log and the seed's. Scores are formatted
// for the same reason as the GCRA's times.
const ceilingSlidingLog = `
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local window, max = tonumber(ARGV[1]), tonumber(ARGV[2])
local pexpire = math.ceil(window / 1000)
local score, cutoff = string.format('%d', now), string.format('%d', now - window)
local out = {}
for i, k in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', k, '-inf', cutoff)
  if redis.call('ZCARD', k) < max then
    redis.call('ZADD', k, score, ARGV[3] .. i)
    redis.call('PEXPIRE', k, pexpire)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`

var (
	ceilingGCRAScript       = redis.NewScript(ceilingGCRA)
	ceilingSlidingLogScript = redis.NewScript(ceilingSlidingLog)
	// ceilingBatches numbers batches process-wide, so that sliding-log
	// members stay unique across batches decided in the same microsecond.
	ceilingBatches atomic.Uint64
)

// ceilingCall is one queued decision; done receives once it is made.
type ceilingCall struct {
	key     string
	allowed bool
	err     error
	done    chan struct{}
}

var ceilingCalls = sync.Pool{New: func() any { return &ceilingCall{done: make(chan struct{}, 1)} }}

type ceiling struct {
	client *redis.Client
	script *redis.Script
	// args returns the script's ARGV for one batch.
	args func() []any

	mu       sync.Mutex
	queue    []*ceilingCall
	inflight int
}

// decide queues the call. When fewer than two batches are in flight the
// caller sends one itself, and keeps sending what queued meanwhile until
// the queue is empty; otherwise it waits for a sender to take its call.
// The batches run on context.Background: the ceiling keeps no deadline.
func (c *ceiling) decide(_ context.Context, key string) (bool, error) {
	call := ceilingCalls.Get().(*ceilingCall)
	call.key = key
	c.mu.Lock()
	c.queue = append(c.queue, call)
	if c.inflight < 2 {
		c.inflight++
		for len(c.queue) > 0 {
			n := min(len(c.queue), ceilingBatch)
			batch := make([]*ceilingCall, n)
			copy(batch, c.queue)
			c.queue = c.queue[:copy(c.queue, c.queue[n:])]
			c.mu.Unlock()
			c.send(batch)
			c.mu.Lock()
		}
		c.inflight--
	}
	c.mu.Unlock()
	<-call.done
	allowed, err := call.allowed, call.err
	call.key, call.err = "", nil
	ceilingCalls.Put(call)
	return allowed, err
}

// send decides one batch with one EVALSHA (EVAL once on NOSCRIPT) and
// wakes its callers.
func (c *ceiling) send(batch []*ceilingCall) {
	keys := make([]string, len(batch))
	for i, call := range batch {
		keys[i] = call.key
	}
	res, err := c.script.Run(context.Background(), c.client, keys, c.args()...).Int64Slice()
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("ceiling: %d verdicts for %d calls", len(res), len(batch))
	}
	for i, call := range batch {
		call.err = err
		call.allowed = err == nil && res[i] == 1
		call.done <- struct{}{}
	}
}

func ceilingGCRABuild(c *redis.Client, s spec, _ func() time.Time) (decideFunc, error) {
	window := s.window.Microseconds()
	// A fractional interval: at Max 1<<20 per second it is below 1 µs.
	args := []any{float64(window) / float64(s.max), window}
	cl := &ceiling{client: c, script: ceilingGCRAScript, args: func() []any { return args }}
	return cl.decide, nil
}

func ceilingSlidingLogBuild(c *redis.Client, s spec, _ func() time.Time) (decideFunc, error) {
	window := s.window.Microseconds()
	cl := &ceiling{client: c, script: ceilingSlidingLogScript, args: func() []any {
		return []any{window, s.max, strconv.FormatUint(ceilingBatches.Add(1), 36) + ":"}
	}}
	return cl.decide, nil
}

// ceilingContenders are the ceiling's two algorithms, benchmarked beside
// ratelimitgen's: each ratelimitgen row is compared with the ceiling of its
// algorithm (cmd/perftable's ours/ceiling).
var ceilingContenders = []contender{
	{name: "ceiling-sliding-log", algorithm: "sliding log (exact)", clock: "server", build: ceilingSlidingLogBuild},
	{name: "ceiling-gcra", algorithm: "GCRA", clock: "server", build: ceilingGCRABuild},
}
