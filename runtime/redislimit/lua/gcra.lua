-- gcra: a string holding the theoretical arrival time (TAT) in µs. Calls
-- are spaced by ceil(window/max) µs with a tolerance of burst intervals.
-- One GET, and one SET when admitting. Go twin: memory_gcra.go.

algos['gcra'] = {
  check = function(key, p, now)
    local interval = math.floor((p.window + p.max - 1) / p.max)
    local tolerance = p.burst * interval
    local tat = tonumber(redis.call('GET', key))
    if tat == nil or tat < now then
      tat = now
    end
    local new = tat + p.cost * interval
    local v = {ok = true, remaining = math.floor((tolerance - (tat - now)) / interval), retry = 0, reset = tat - now, new = new}
    if new - now > tolerance then
      v.ok = false
      v.retry = new - tolerance - now
      if v.remaining < 0 then
        v.remaining = 0
      end
    end
    return v
  end,

  -- An admitted call left at least cost intervals of tolerance, so the
  -- remaining floor((tolerance - (new-now)) / interval) is check's less
  -- cost, which check did not clamp.
  commit = function(key, p, now, v)
    local reset = v.new - now
    v.remaining = v.remaining - p.cost
    v.reset = reset
    redis.call('SET', key, string.format('%d', v.new), 'PX', string.format('%d', math.floor((reset + 999) / 1000) + ttl_pad_ms))
  end,

  refund = function(key, p, now)
    local tat = tonumber(redis.call('GET', key))
    if tat ~= nil then
      local interval = math.floor((p.window + p.max - 1) / p.max)
      redis.call('SET', key, string.format('%d', tat - p.cost * interval), 'KEEPTTL')
    end
  end,
}
