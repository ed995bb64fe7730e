-- sliding-log: exact. A ZSET of admissions whose score and member are the
-- admission time in µs: integer members are stored compactly, about a third
-- of the seed's timestamp-plus-UUID members. Times are kept strictly
-- increasing so members are unique even within one microsecond.
-- Go twin: memory_slidinglog.go.

algos['sliding-log'] = {
  check = function(key, p, now)
    -- The window is (now-window, now]: an admission at s stops counting at s+window.
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - p.window)
    local count = redis.call('ZCARD', key)
    local v = {count = count, remaining = math.max(0, p.max - count), retry = 0, reset = 0}
    if count > 0 then
      v.newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
      v.reset = v.newest + p.window - now
    end
    if count + p.cost > p.max then
      -- Room for this call appears when the (count+cost-max)-th oldest expires.
      local i = count + p.cost - p.max - 1
      local edge = tonumber(redis.call('ZRANGE', key, i, i, 'WITHSCORES')[2])
      v.ok = false
      v.retry = edge + p.window - now
      return v
    end
    v.ok = true
    return v
  end,

  commit = function(key, p, now, v)
    local t = now
    if v.newest ~= nil and v.newest >= t then
      t = v.newest + 1
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
