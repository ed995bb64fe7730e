-- gcra: a string holding the theoretical arrival time (TAT) in µs. Calls
-- are spaced by ceil(window/max) µs with a tolerance of burst intervals.
-- One GET, and one SET when admitting. Go twin: memory_gcra.go.

algos['gcra'] = {
  check = function(key, p, now, v)
    local interval = floordiv(p.window + p.max - 1, p.max)
    local tolerance = p.burst * interval
    local tat = tonumber(redis.call('GET', key))
    if tat == nil or tat < now then
      tat = now
    end
    local new = tat + p.cost * interval
    v.ok, v.remaining, v.retry, v.reset, v.receipt, v.new = true, floordiv(tolerance - (tat - now), interval), 0, tat - now, nil, new
    if new - now > tolerance then
      v.ok = false
      v.retry = new - tolerance - now
      if v.remaining < 0 then
        v.remaining = 0
      end
    end
  end,

  -- An admitted call left at least cost intervals of tolerance, so the
  -- remaining floor((tolerance - (new-now)) / interval) is check's less
  -- cost, which check did not clamp.
  commit = function(key, p, now, v)
    local reset = v.new - now
    v.remaining = v.remaining - p.cost
    v.reset = reset
    redis.call('SET', key, string.format('%d', v.new), 'PX', string.format('%d', floordiv(reset + 999, 1000) + ttl_pad_ms))
  end,

  refund = function(key, p, now)
    local tat = tonumber(redis.call('GET', key))
    if tat ~= nil then
      local interval = floordiv(p.window + p.max - 1, p.max)
      redis.call('SET', key, string.format('%d', tat - p.cost * interval), 'KEEPTTL')
    end
  end,
}
