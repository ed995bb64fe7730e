-- Sliding-log rate limiter: one decision for one key, atomically.
-- The Go twin is runtime/slidinglog.go; both must decide identically.
--
-- KEYS[1]  the limit's storage key (a ZSET of admissions)
-- ARGV[1]  window, µs
-- ARGV[2]  max admissions per window
-- ARGV[3]  cost of this call (1 <= cost <= max, checked by the caller)
-- ARGV[4]  now in µs, or -1 to read the server's clock
--
-- Returns {allowed (1|0), remaining, retry_after_us, reset_after_us}.
--
-- Each admission is one member whose score is its time in µs and whose
-- member is the same number: integers are stored compactly, about a third of
-- the seed's timestamp-plus-UUID members. Times are kept strictly increasing
-- so members are unique even within one microsecond.

local key = KEYS[1]
local window = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if now < 0 then
  -- The server's clock, not the callers': app servers' clocks drift apart.
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The window is (now-window, now]: an admission at s stops counting at s+window.
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)

local newest = nil
if count > 0 then
  newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
end

if count + cost > max then
  -- Room for this call appears when the (count+cost-max)-th oldest expires.
  local i = count + cost - max - 1
  local edge = tonumber(redis.call('ZRANGE', key, i, i, 'WITHSCORES')[2])
  local remaining = max - count
  if remaining < 0 then remaining = 0 end
  return {0, remaining, edge + window - now, newest + window - now}
end

local t = now
if newest ~= nil and newest >= t then
  t = newest + 1
end
-- ZADD in chunks: Lua's unpack is limited to a few thousand values.
local args = {}
for i = 0, cost - 1 do
  local s = string.format('%.0f', t + i)
  args[#args + 1] = s
  args[#args + 1] = s
  if #args >= 1000 then
    redis.call('ZADD', key, unpack(args))
    args = {}
  end
end
if #args > 0 then
  redis.call('ZADD', key, unpack(args))
end

local reset = t + cost - 1 + window - now
-- Expire the key exactly when its newest admission leaves the window.
redis.call('PEXPIRE', key, math.ceil(reset / 1000))
return {1, max - count - cost, 0, reset}
