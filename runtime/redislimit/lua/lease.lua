-- Entry point of the lease script (lease.go, leasegrant.go): it releases
-- leases an instance is done with and grants it a new one, for one limit
-- on one key, in one call. Go concatenates header.lua, the rate-style
-- algorithms' files and this one.
--
-- A lease of k units is k admissions of cost 1, recorded at grant time as
-- admissions made now would be; the instance then admits from them on its
-- own until the lease ends, and gives back what it did not use. So every
-- admission it makes is paid for here before it is made.
--
-- KEYS[1]   the limit's storage key
-- KEYS[2]   its lease records: a HASH of lease id -> 'k:expiry:receipt'
--           (units granted, the µs at which the lease ends, and the
--           window or bucket it was charged to), living as long as the
--           latest lease
-- ARGV[1]   LEASE
-- ARGV[2]   little-endian 64-bit integers: code, window µs, max, burst,
--           now (µs, or -1 for the server's clock), units wanted (0 to
--           release only), the longest life of a lease in µs, the new
--           lease's id, then for each lease released its id and the units
--           it did not use
--
-- Returns five little-endian 64-bit integers: units granted (0 when the
-- limit has no room), the µs the lease lives, remaining, retry µs (for a
-- grant of 0) and reset µs as a decision of the limit would report them.
--
-- Giving units back must never leave the state more permissive than the
-- history in which only the used units were admitted. Fixed and sliding
-- windows count admissions per window or bucket, so subtracting what was
-- not used from the one the lease was charged to is exactly that history,
-- and a lease ends with that window (or bucket, a tenth of the window).
-- GCRA and the token bucket refill up to a cap, which absorbs charges: a
-- refund after the cap was reached would give back room never taken. So
-- the units leased out, L, stay out of the bucket: its refill is capped at
-- burst - L (lua/gcra.lua, lua/token_bucket.lua), a release puts back the
-- unused units and takes its lease out of L, and a lease that ends
-- unreleased leaves L with none given back. The bucket and the leases
-- together then never hold more than burst, and what is admitted in any
-- span t stays within burst + rate*t.

local code, window, max, burst, now, want, life, id = struct.unpack('<i8i8i8i8i8i8i8i8', ARGV[2])
if now < 0 then
  local t = call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  ttl_pad_ms = 1000
end
local key, records = KEYS[1], KEYS[2]

-- The records: the leases released (and not yet ended) are given back,
-- the ended ones forgotten, and the rest, still live, sum to held and end
-- by latest.
local released = {}
local nrel = (#ARGV[2] / 8 - 8) / 2
if nrel > 0 then
  local r = {struct.unpack('<' .. string.rep('i8', nrel * 2), ARGV[2], 65)}
  for i = 1, #r, 2 do
    released[string.format('%d', r[i])] = r[i + 1]
  end
end
local giveback, held, latest = {}, 0, nil
local flat = call('HGETALL', records)
for i = 1, #flat, 2 do
  local k, e, receipt = string.match(flat[i + 1], '^(%d+):(-?%d+):(-?%d+)$')
  k, e, receipt = tonumber(k), tonumber(e), tonumber(receipt)
  local unused = released[flat[i]]
  if e <= now or unused then
    call('HDEL', records, flat[i])
    if unused and e > now then
      giveback[#giveback + 1] = {k, math.min(math.max(unused, 0), k), receipt}
    end
  else
    held = held + k
    if latest == nil or e > latest then
      latest = e
    end
  end
end

local granted, ends, remaining, retry, reset, receipt = 0, now + life, 0, 0, 0, 0

if code == GCRA or code == TOKEN_BUCKET then
  -- level: GCRA's TAT, or the token bucket's tokens (in 1/window) and the
  -- time they refer to; out, untl: the units leased out as the state
  -- says, and until when at the latest.
  local interval = (window + max - 1 - (window + max - 1) % max) / max
  local tolerance = burst * interval
  local cap = burst * window
  local level, at, out, untl
  local plain
  if code == GCRA then
    plain = call('GET', key)
  else
    local st = call('HMGET', key, 't', 's')
    plain, at = st[1], tonumber(st[2])
  end
  level, out = tonumber(plain), 0
  if level == nil and plain then
    local a, l, x = string.match(plain, '^(-?%d+):(%d+):(%d+)$')
    level, out, untl = tonumber(a), tonumber(l), tonumber(x)
  end
  -- refill moves the state to time s with out units leased out.
  local function refill(s, out)
    if code == GCRA then
      level = math.max(level, s + out * interval)
    elseif s > at then
      level = math.min(level + (s - at) * max, cap - out * window)
      at = s
    else
      level = math.min(level, cap - out * window)
    end
  end
  if level == nil or (code == TOKEN_BUCKET and at == nil) then
    -- No state: a full bucket.
    level, at, out = code == GCRA and now or cap, now, 0
  elseif untl and now >= untl then
    -- Every lease the state knows of has ended by untl: the top was out
    -- units lower until then.
    refill(untl, out)
    out = 0
  end
  -- Up to now with every lease the state knew of still out: the ended
  -- ones count as used until now, which errs toward denial.
  refill(now, out)
  for _, g in ipairs(giveback) do
    if code == GCRA then
      level = level - g[2] * interval
    else
      level = level + g[2] * window
    end
  end
  refill(now, held)
  -- The room, in units of cost 1.
  local room
  if code == GCRA then
    room = tolerance - (level - now)
    room = (room - room % interval) / interval
  else
    room = (level - level % window) / window
  end
  granted = math.max(math.min(want, room), 0)
  if granted > 0 then
    if code == GCRA then
      level = level + granted * interval
    else
      level = level - granted * window
    end
    held = held + granted
    latest = math.max(latest or ends, ends)
  end
  if code == GCRA then
    remaining = tolerance - (level - now)
    remaining = math.max((remaining - remaining % interval) / interval, 0)
    reset = level - now
    if want > 0 and granted == 0 then
      retry = level + interval - tolerance - now
    end
  else
    -- (A charge, lua/main.lua's SETTLE, may leave the level below 0.)
    remaining = math.max((level - level % window) / window, 0)
    local fill = cap - held * window - level + max - 1
    reset = at - now + (fill - fill % max) / max
    if want > 0 and granted == 0 then
      local need = window - level + max - 1
      retry = at - now + (need - need % max) / max
    end
  end
  -- The state, leased while any lease is live; a TAT already past lives
  -- a millisecond, as good as no state.
  local life_us = math.max(reset, 1)
  local value = string.format('%d', level)
  if held > 0 then
    value = string.format('%d:%d:%d', level, held, latest)
    life_us = math.max(life_us, latest - now)
  end
  local px = string.format('%d', (life_us + 999 - (life_us + 999) % 1000) / 1000 + ttl_pad_ms)
  if code == GCRA then
    call('SET', key, value, 'PX', px)
  else
    call('HSET', key, 't', value, 's', string.format('%d', at))
    call('PEXPIRE', key, px)
  end
else
  -- Fixed and sliding windows: the releases are refunds to the window or
  -- bucket charged, the grant an admission of the units there is room for.
  local a = algos[code]()
  local p = {window = window, max = max, burst = burst, cost = 0, receipt = 0, shadow = false}
  for _, g in ipairs(giveback) do
    if g[2] > 0 then
      p.cost, p.receipt = g[2], g[3]
      a.refund(key, p, now)
    end
  end
  local v = {ok = false, remaining = 0, retry = 0, reset = 0, receipt = 0}
  p.cost = math.max(want, 1)
  a.check(key, p, now, v)
  if want > 0 and not v.ok and v.remaining > 0 then
    p.cost = math.min(want, v.remaining)
    a.check(key, p, now, v)
  end
  remaining, retry, reset = v.remaining, v.retry, v.reset
  if want > 0 and v.ok then
    a.commit(key, p, now, v)
    granted, remaining, reset, receipt = p.cost, v.remaining, v.reset, v.receipt
    -- The lease ends with the window, or the sliding window's bucket, it
    -- was charged to.
    local width = window
    if code == SLIDING_WINDOW then
      width = (window + 9 - (window + 9) % 10) / 10
    end
    ends = math.min(ends, (receipt + 1) * width)
    latest = math.max(latest or ends, ends)
  elseif want == 0 then
    retry = 0
  end
end

if granted > 0 then
  call('HSET', records, string.format('%d', id), string.format('%d:%d:%d', granted, ends, receipt))
end
if latest then
  local ms = latest - now + 999
  call('PEXPIRE', records, string.format('%d', (ms - ms % 1000) / 1000 + ttl_pad_ms))
end
return struct.pack('<i8i8i8i8i8', granted, granted > 0 and ends - now or 0, remaining, retry, reset)
