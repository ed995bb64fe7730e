-- Entry point of the limiter script. Go concatenates lua/*.lua (this file
-- last) into one script, so that one EVALSHA decides any mix of algorithms
-- and several limits at once, all or nothing. Each algorithm file registers
-- check, commit and refund functions, and optionally settle, in the table
-- `algos`; their Go twins in memory_*.go must decide identically.
--
-- check only reads. commit records an admission, and its first write is a
-- command that Redis refuses when it is out of memory (maxmemory with
-- noeviction): Redis checks memory only at a script's first write, so any
-- write before it, even a deletion, would let every later one through.
-- settle tidies up (deletes what stopped counting) when nothing is recorded.
--
-- KEYS[i]   storage key of limit i
-- ARGV[1]   'a' to decide, 'c' to check without recording anything,
--           'r' to refund earlier admissions
-- ARGV[2]   now in µs, or -1 to read the server's clock
-- ARGV[3 + 6(i-1) ...]  for limit i: algo, window µs, max, burst, cost, receipt
--
-- 'a' returns {allowed, then per limit: allowed, remaining, retry µs,
-- reset µs, receipt}. Nothing is written unless every limit allows.
-- 'r' undoes the admissions identified by the receipts (used when limits on
-- different cluster slots were decided one slot after another) and
-- returns {}. Its last key is a marker unique to the refund, in the same
-- slot: a client that resends the command after losing the reply finds the
-- marker and refunds nothing, so a refund applies at most once.

local mode = ARGV[1]
local now = tonumber(ARGV[2])
if now < 0 then
  -- The server's clock, not the callers': app servers' clocks drift apart.
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  ttl_pad_ms = 1000
end

-- A refund marker outlives any client retry of its command by far; it is
-- written only when refunding, never on the decision path.
local refund_marker_ms = 60000

local n = #KEYS
if mode == 'r' then
  n = n - 1
end

local ps = {}
for i = 1, n do
  local b = 2 + (i - 1) * 6
  ps[i] = {
    algo = ARGV[b + 1],
    window = tonumber(ARGV[b + 2]),
    max = tonumber(ARGV[b + 3]),
    burst = tonumber(ARGV[b + 4]),
    cost = tonumber(ARGV[b + 5]),
    receipt = tonumber(ARGV[b + 6]),
  }
  if algos[ps[i].algo] == nil then
    return redis.error_reply('ERR ratelimit: unknown algorithm ' .. tostring(ps[i].algo))
  end
end

if mode == 'r' then
  if not redis.call('SET', KEYS[n + 1], '1', 'NX', 'PX', refund_marker_ms) then
    return {}
  end
  for i = 1, n do
    algos[ps[i].algo].refund(KEYS[i], ps[i], now)
  end
  return {}
end

local verdicts = {}
local all = true
for i = 1, n do
  verdicts[i] = algos[ps[i].algo].check(KEYS[i], ps[i], now)
  if not verdicts[i].ok then
    all = false
  end
end
if all and mode == 'a' then
  for i = 1, n do
    algos[ps[i].algo].commit(KEYS[i], ps[i], now, verdicts[i])
  end
else
  for i = 1, n do
    local settle = algos[ps[i].algo].settle
    if settle ~= nil then
      settle(KEYS[i], ps[i], now, verdicts[i])
    end
  end
end

local committed = all and mode == 'a'
local out = {committed and 1 or 0}
for i = 1, n do
  local v = verdicts[i]
  out[#out + 1] = v.ok and 1 or 0
  out[#out + 1] = v.remaining
  out[#out + 1] = v.retry
  out[#out + 1] = v.reset
  out[#out + 1] = v.receipt or 0
end
return out
