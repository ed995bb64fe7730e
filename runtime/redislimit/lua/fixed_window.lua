-- fixed-window: a HASH {w = window index, n = count} per key, windows aligned
-- to the Unix epoch. Go twin: memory_fixedwindow.go.

algos['fixed-window'] = {
  check = function(key, p, now)
    local w = math.floor(now / p.window)
    local st = redis.call('HMGET', key, 'w', 'n')
    local sw = tonumber(st[1])
    local count = 0
    if sw ~= nil and sw >= w then
      -- A window later than ours was written by a clock ahead of ours: keep
      -- counting in it rather than reopen an earlier one.
      w = sw
      count = tonumber(st[2])
    end
    local ends = (w + 1) * p.window - now
    local v = {w = w, count = count, remaining = math.max(0, p.max - count), retry = 0, reset = 0}
    if count > 0 then
      v.reset = ends
    end
    if count + p.cost > p.max then
      v.ok = false
      v.retry = ends
      return v
    end
    v.ok = true
    return v
  end,

  commit = function(key, p, now, v)
    redis.call('HSET', key, 'w', fmt(v.w), 'n', fmt(v.count + p.cost))
    v.remaining = p.max - v.count - p.cost
    v.reset = (v.w + 1) * p.window - now
    v.receipt = v.w
    redis.call('PEXPIRE', key, ttl_ms(v.reset))
  end,

  refund = function(key, p, now)
    if tonumber(redis.call('HGET', key, 'w')) == p.receipt then
      redis.call('HINCRBY', key, 'n', fmt(-p.cost))
    end
  end,
}
