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

algos['sliding-log'] = {
  -- The window is (now-window, now]: an admission at s stops counting at
  -- s+window. The log is its stale entries, those that stopped counting,
  -- then the `count` ones still counting. v.trim is the score up to which
  -- entries are stale, as a string; v.stale how many there are, or -1 when
  -- check did not count them.
  --
  -- A compact log (Max <= sl_compact) is counted with ZCARD, constant
  -- time, less a ZCOUNT of the stale entries, which Redis walks one by one
  -- in a compact ZSET: counting the others the same way would cost a walk
  -- of up to Max entries. A larger log may be a skiplist, where ZCOUNT of
  -- the entries still counting takes one command and logarithmic time.
  check = function(key, p, now, v)
    local upto = now - p.window
    local trim = string.format('%d', upto)
    v.ok, v.remaining, v.retry, v.reset, v.receipt = true, p.max, 0, 0, nil
    v.trim, v.stale, v.newest = trim, 0, nil
    -- Members are their own scores.
    local count, newest
    if p.max > 128 then
      count = redis.call('ZCOUNT', key, '(' .. trim, '+inf')
      v.stale = -1
      if count > 0 then
        newest = tonumber(redis.call('ZRANGE', key, '-1', '-1')[1])
      end
    else
      count = redis.call('ZCARD', key)
      if count > 0 then
        newest = tonumber(redis.call('ZRANGE', key, '-1', '-1')[1])
        if newest <= upto then
          v.stale = count
          count = 0
        elseif count > 1 then
          v.stale = redis.call('ZCOUNT', key, '-inf', trim)
          count = count - v.stale
        end
      end
    end
    if count > 0 then
      v.newest = newest
      v.reset = newest + p.window - now
    end
    v.remaining = p.max - count
    if count + p.cost > p.max then
      -- Room for this call appears when the (count+cost-max)-th oldest
      -- admission still counting expires: the (max-cost+1)-th newest.
      local i = string.format('%d', p.cost - p.max - 1)
      local r
      if v.stale < 0 and count + p.cost - p.max == 1 then
        -- That is the oldest still counting (a key called at its limit,
        -- one unit at a time), and the stale entries were not counted: the
        -- entry before it shows whether there are any, which spares settle
        -- a write.
        r = redis.call('ZRANGE', key, string.format('%d', p.cost - p.max - 2), i)
        if #r == 1 then
          v.stale = 0
        end
      else
        r = redis.call('ZRANGE', key, i, i)
      end
      v.ok = false
      v.retry = tonumber(r[#r]) + p.window - now
      if v.remaining < 0 then
        v.remaining = 0
      end
    end
  end,

  -- settle may run after later calls of the same script recorded in this
  -- log, so it removes by score.
  settle = function(key, v)
    if v.stale ~= 0 then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', v.trim)
    end
  end,

  commit = function(key, p, now, v)
    local t = now
    if v.newest ~= nil and v.newest >= t then
      t = v.newest + 1
    end
    local cost = p.cost
    local stale = v.stale
    -- Recording first could take a compact log with stale entries past
    -- sl_compact entries; then a write that changes nothing (XX: existing
    -- members only, and members are never 'x') comes first instead, for
    -- Redis to refuse.
    local compact = stale > 0 and p.max <= 128 and p.max + cost > 128
    if compact then
      redis.call('ZADD', key, 'XX', '0', 'x')
      redis.call('ZREMRANGEBYSCORE', key, '-inf', v.trim)
      stale = 0
    end
    if cost == 1 then
      local s = string.format('%d', t)
      redis.call('ZADD', key, s, s)
    else
      -- ZADD in chunks: Lua's unpack is limited to a few thousand values.
      local args = {}
      for i = 0, cost - 1 do
        local s = string.format('%d', t + i)
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
    end
    -- Recording appends (t is later than every entry), so the stale
    -- entries are still ranks 0 to stale-1.
    if stale == 1 then
      redis.call('ZREMRANGEBYRANK', key, '0', '0')
    elseif stale ~= 0 then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', v.trim)
    end
    -- check's remaining was max-count, unclamped as count+cost <= max.
    v.remaining = v.remaining - cost
    v.reset = t + cost - 1 + p.window - now
    v.receipt = t
    -- Expire the key exactly when its newest admission leaves the window.
    redis.call('PEXPIRE', key, string.format('%d', floordiv(v.reset + 999, 1000) + ttl_pad_ms))
  end,

  -- The admissions of one call are the only members in [t, t+cost-1].
  refund = function(key, p, now)
    redis.call('ZREMRANGEBYSCORE', key, string.format('%d', p.receipt), string.format('%d', p.receipt + p.cost - 1))
  end,
}
