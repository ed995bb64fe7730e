-- sliding-log: exact. A ZSET of admissions whose score and member are the
-- admission time in µs: integer members are stored compactly, about a third
-- of the seed's timestamp-plus-UUID members. Times are kept strictly
-- increasing so members are unique even within one microsecond.
-- Go twin: memory_slidinglog.go.

-- sl_compact is Redis's default zset-max-listpack-entries (before Redis 7,
-- zset-max-ziplist-entries): a ZSET holding more entries is converted to a
-- skiplist, about six times larger, and never back. A log holds at most Max
-- entries after each call, but recording before removing may briefly hold
-- Max+cost of them.
local sl_compact = 128

local function sl_tidy(key, upto)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', upto)
end

algos['sliding-log'] = {
  check = function(key, p, now)
    -- The window is (now-window, now]: an admission at s stops counting at
    -- s+window. The entries still counting are the last `count` ones.
    local upto = now - p.window
    local count = redis.call('ZCOUNT', key, '(' .. fmt(upto), '+inf')
    local v = {count = count, remaining = math.max(0, p.max - count), retry = 0, reset = 0, upto = upto}
    if count > 0 then
      v.newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
      v.reset = v.newest + p.window - now
    end
    v.ok = count + p.cost <= p.max
    v.untidy = true
    if not v.ok then
      -- Room for this call appears when the (count+cost-max)-th oldest
      -- admission still counting expires: the (max-cost+1)-th newest. When
      -- that is the oldest still counting (a key called at its limit, one
      -- unit at a time), the entry before it shows whether any entry
      -- stopped counting, which spares settle a write.
      local i = p.cost - p.max - 1
      local r = redis.call('ZRANGE', key, i - 1, i, 'WITHSCORES')
      v.retry = tonumber(r[#r]) + p.window - now
      v.untidy = count + p.cost - p.max > 1 or #r > 2
    end
    return v
  end,

  settle = function(key, p, now, v)
    if v.untidy then
      sl_tidy(key, v.upto)
    end
  end,

  commit = function(key, p, now, v)
    local t = now
    if v.newest ~= nil and v.newest >= t then
      t = v.newest + 1
    end
    -- Recording first could take a compact log past sl_compact entries;
    -- then a write that changes nothing (XX: existing members only, and
    -- members are never 'x') comes first instead, for Redis to refuse.
    local compact = p.max <= sl_compact and p.max + p.cost > sl_compact
    if compact then
      redis.call('ZADD', key, 'XX', 0, 'x')
      sl_tidy(key, v.upto)
    end
    -- ZADD in chunks: Lua's unpack is limited to a few thousand values.
    local args = {}
    for i = 0, p.cost - 1 do
      local s = fmt(t + i)
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
    if not compact then
      sl_tidy(key, v.upto)
    end
    v.remaining = p.max - v.count - p.cost
    v.reset = t + p.cost - 1 + p.window - now
    v.receipt = t
    -- Expire the key exactly when its newest admission leaves the window.
    redis.call('PEXPIRE', key, ttl_ms(v.reset))
  end,

  -- The admissions of one call are the only members in [t, t+cost-1].
  refund = function(key, p, now)
    redis.call('ZREMRANGEBYSCORE', key, p.receipt, p.receipt + p.cost - 1)
  end,
}
