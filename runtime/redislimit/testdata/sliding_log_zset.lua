-- sliding-log: exact. A ZSET of admissions whose score and member are the
-- admission time in µs: integer members are stored compactly, about a third
-- of the seed's timestamp-plus-UUID members. Times are kept strictly
-- increasing so members are unique even within one microsecond.
-- Go twin: memory_slidinglog.go.

-- 128 below is Redis's default zset-max-listpack-entries (before Redis 7,
-- zset-max-ziplist-entries): a ZSET holding more entries is converted to a
-- skiplist, about six times larger, and never back. It is a literal, as a
-- local would be an upvalue, which each run allocates. A log holds at most
-- Max entries after each call, but recording before removing may briefly
-- hold Max+cost of them.

-- The window is (now-window, now]: an admission at s stops counting at
-- s+window. The log is its stale entries, those that stopped counting,
-- then the `count` ones still counting. trim is the score up to which
-- entries are stale, as a string; stale how many there are, or -1 when
-- sl_read did not count them.
--
-- A compact log (Max <= 128) is counted with ZCARD, constant time,
-- less a ZCOUNT of the stale entries, which Redis walks one by one in a
-- compact ZSET: counting the others the same way would cost a walk of up
-- to Max entries. A larger log may be a skiplist, where ZCOUNT of the
-- entries still counting takes one command and logarithmic time.
--
-- sl_read returns, for a call of cost at now: whether it has room, the
-- remaining calls before it (clamped at 0 when it has none), the µs until
-- room when it has none and until the log empties, and trim, stale and the
-- newest entry still counting (nil if none), for sl_write and settle.
--
-- With lazy, a call that has room even if none of the log is stale leaves
-- the stale entries uncounted and in count: stale is nil, and remaining
-- too low by their number until sl_write's trim counts them. A busy key
-- under its limit is then decided without a ZCOUNT. count, when given, is
-- the log's ZCARD, read already.
--
-- On the server's clock and with sl_gt, decide1 records a call of cost 1
-- that a compact log has room for even if none of it is stale after
-- reading nothing but its ZCARD: its entry is now's, which only a call of
-- this script can already hold, and PEXPIRE's GT never shortens the key's
-- life if an entry is later (the server's clock stepped back). Its reset
-- is then the log's emptying as of its own entry. decide1 also records a
-- call of cost 1 in an empty log itself. Both are written out there, where
-- sl_read and sl_write would cost two Lua function calls, each of them
-- hundreds of Redis instructions.
--
-- In a batch the calls share their time, and those of fresh keys their
-- members and lifetimes, so each number is formatted again only when it
-- changes.
local sl_upto, sl_trim, sl_t, sl_member, sl_px, sl_px_s
-- PEXPIRE's GT and REDIS_VERSION_NUM both came with Redis 7.
local sl_gt = redis.REDIS_VERSION_NUM ~= nil
local function sl_read(key, now, window, max, cost, lazy, count)
  local upto = now - window
  if upto ~= sl_upto then
    sl_upto, sl_trim = upto, string.format('%d', upto)
  end
  local trim = sl_trim
  local stale, reset = 0, 0
  -- Members are their own scores.
  local newest
  if max > 128 then
    count = call('ZCOUNT', key, '(' .. trim, '+inf')
    stale = -1
    if count > 0 then
      newest = tonumber(call('ZRANGE', key, '-1', '-1')[1])
    end
  else
    count = count or call('ZCARD', key)
    if count > 0 then
      newest = tonumber(call('ZRANGE', key, '-1', '-1')[1])
      if newest <= upto then
        stale = count
        count = 0
      elseif count + cost <= max and lazy then
        if count > 1 then
          stale = nil
        end
      elseif count > 1 then
        stale = call('ZCOUNT', key, '-inf', trim)
        count = count - stale
      end
    end
  end
  if count > 0 then
    reset = newest + window - now
  else
    newest = nil
  end
  local remaining = max - count
  if count + cost <= max then
    return true, remaining, 0, reset, trim, stale, newest
  end
  -- Room for this call appears when the (count+cost-max)-th oldest
  -- admission still counting expires: the (max-cost+1)-th newest.
  local i = string.format('%d', cost - max - 1)
  local r
  if stale < 0 and count + cost - max == 1 then
    -- That is the oldest still counting (a key called at its limit, one
    -- unit at a time), and the stale entries were not counted: the entry
    -- before it shows whether there are any, which spares settle a write.
    r = call('ZRANGE', key, string.format('%d', cost - max - 2), i)
    if #r == 1 then
      stale = 0
    end
  else
    r = call('ZRANGE', key, i, i)
  end
  if remaining < 0 then
    remaining = 0
  end
  return false, remaining, tonumber(r[#r]) + window - now, reset, trim, stale, newest
end

-- sl_write records a call that sl_read found room for, and returns the
-- remaining calls, the µs until the log empties, and the receipt.
local function sl_write(key, now, window, max, cost, remaining, trim, stale, newest)
  local t = now
  if newest ~= nil and newest >= t then
    t = newest + 1
  end
  -- Recording first could take a compact log with stale entries past
  -- 128 entries; then a write that changes nothing (XX: existing
  -- members only, and members are never 'x') comes first instead, for
  -- Redis to refuse.
  -- (A lazy count has room whether or not any entry is stale: count+cost
  -- entries, at most max.)
  if stale ~= nil and stale > 0 and max <= 128 and max + cost > 128 then
    call('ZADD', key, 'XX', '0', 'x')
    call('ZREMRANGEBYSCORE', key, '-inf', trim)
    stale = 0
  end
  if cost == 1 then
    if t ~= sl_t then
      sl_t, sl_member = t, string.format('%d', t)
    end
    call('ZADD', key, sl_member, sl_member)
  else
    -- ZADD in chunks: Lua's unpack is limited to a few thousand values.
    local args = {}
    for i = 0, cost - 1 do
      local s = string.format('%d', t + i)
      args[#args + 1] = s
      args[#args + 1] = s
      if #args >= 1000 then
        call('ZADD', key, unpack(args))
        args = {}
      end
    end
    if #args > 0 then
      call('ZADD', key, unpack(args))
    end
  end
  -- Recording appends (t is later than every entry), so the stale entries
  -- are still ranks 0 to stale-1.
  if stale == nil then
    remaining = remaining + call('ZREMRANGEBYSCORE', key, '-inf', trim)
  elseif stale == 1 then
    call('ZREMRANGEBYRANK', key, '0', '0')
  elseif stale ~= 0 then
    call('ZREMRANGEBYSCORE', key, '-inf', trim)
  end
  local reset = t + cost - 1 + window - now
  -- Expire the key exactly when its newest admission leaves the window.
  -- floordiv, written out as in gcra.lua.
  local px = reset + 999
  px = (px - px % 1000) / 1000 + ttl_pad_ms
  if px ~= sl_px then
    sl_px, sl_px_s = px, string.format('%d', px)
  end
  call('PEXPIRE', key, sl_px_s)
  -- sl_read's remaining was max-count, unclamped as count+cost <= max.
  return remaining - cost, reset, t
end

-- A denied call returns what settle needs, for main.lua to settle it
-- after the batch, or settles at once when alone.
decide1s[SLIDING_LOG] = function(key, now, window, max, burst, cost, alone)
  local count
  if max <= 128 then
    count = call('ZCARD', key)
  end
  if count == 0 and cost == 1 then
    -- An empty log, the commonest: what sl_read and sl_write do for it.
    if now ~= sl_t then
      sl_t, sl_member = now, string.format('%d', now)
    end
    call('ZADD', key, sl_member, sl_member)
    local px = window + 999
    px = (px - px % 1000) / 1000 + ttl_pad_ms
    if px ~= sl_px then
      sl_px, sl_px_s = px, string.format('%d', px)
    end
    call('PEXPIRE', key, sl_px_s)
    return true, max - 1, 0, window, now
  end
  if count ~= nil and count > 0 and count < max and cost == 1 and sl_gt and ttl_pad_ms == 0 then
    -- A compact log with room even if none of it is stale, on the
    -- server's clock: the call is recorded at now, stale entries or
    -- not, then they are trimmed (see sl_read).
    local upto = now - window
    if upto ~= sl_upto then
      sl_upto, sl_trim = upto, string.format('%d', upto)
    end
    local t = now
    if t ~= sl_t then
      sl_t, sl_member = t, string.format('%d', t)
    end
    if call('ZADD', key, 'NX', sl_member, sl_member) == 0 then
      -- A call of this script recorded now already: after the newest.
      t = tonumber(call('ZRANGE', key, '-1', '-1')[1]) + 1
      sl_t, sl_member = t, string.format('%d', t)
      call('ZADD', key, sl_member, sl_member)
    end
    local remaining = max - count - 1 + call('ZREMRANGEBYSCORE', key, '-inf', sl_trim)
    local reset = t + window - now
    -- floordiv, written out as in gcra.lua.
    local px = reset + 999
    px = (px - px % 1000) / 1000
    if px ~= sl_px then
      sl_px, sl_px_s = px, string.format('%d', px)
    end
    call('PEXPIRE', key, sl_px_s, 'GT')
    return true, remaining, 0, reset, t
  end
  local ok, remaining, retry, reset, trim, stale, newest = sl_read(key, now, window, max, cost, true, count)
  if not ok then
    local keep
    if stale ~= 0 then
      if alone then
        -- As settle does.
        call('ZREMRANGEBYSCORE', key, '-inf', trim)
      else
        keep = {trim = trim, stale = stale}
      end
    end
    return false, remaining, retry, reset, 0, keep
  end
  local receipt
  remaining, reset, receipt = sl_write(key, now, window, max, cost, remaining, trim, stale, newest)
  return true, remaining, 0, reset, receipt
end

-- A lone call never reaches these (see lone in header.lua).
if not lone then
  algos[SLIDING_LOG] = function()
    return {
      check = function(key, p, now, v)
        v.ok, v.remaining, v.retry, v.reset, v.trim, v.stale, v.newest = sl_read(key, now, p.window, p.max, p.cost)
        v.receipt = nil
      end,

      -- settle may run after later calls of the same script recorded in this
      -- log, so it removes by score.
      settle = function(key, v)
        if v.stale ~= 0 then
          call('ZREMRANGEBYSCORE', key, '-inf', v.trim)
        end
      end,

      commit = function(key, p, now, v)
        v.remaining, v.reset, v.receipt = sl_write(key, now, p.window, p.max, p.cost, v.remaining, v.trim, v.stale, v.newest)
      end,

      -- The admissions of one call are the only members in [t, t+cost-1].
      refund = function(key, p, now)
        call('ZREMRANGEBYSCORE', key, string.format('%d', p.receipt), string.format('%d', p.receipt + p.cost - 1))
      end,
    }
  end
end
