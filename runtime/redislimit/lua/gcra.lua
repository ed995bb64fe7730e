-- gcra: a string holding the theoretical arrival time (TAT) in µs. Calls
-- are spaced by ceil(window/max) µs with a tolerance of burst intervals.
-- Go twin: memory_gcra.go.

algos['gcra'] = {
  check = function(key, p, now)
    local interval = ceil_div(p.window, p.max)
    local tolerance = p.burst * interval
    local tat = tonumber(redis.call('GET', key))
    if tat == nil or tat < now then
      tat = now
    end
    local new = tat + p.cost * interval
    local v = {new = new, retry = 0, reset = tat - now}
    v.remaining = math.max(0, math.floor((tolerance - (tat - now)) / interval))
    if new - now > tolerance then
      v.ok = false
      v.retry = new - tolerance - now
      return v
    end
    v.ok = true
    return v
  end,

  commit = function(key, p, now, v)
    local interval = ceil_div(p.window, p.max)
    v.remaining = math.floor((p.burst * interval - (v.new - now)) / interval)
    v.reset = v.new - now
    redis.call('SET', key, fmt(v.new), 'PX', ttl_ms(v.reset))
  end,

  refund = function(key, p, now)
    local tat = tonumber(redis.call('GET', key))
    if tat ~= nil then
      local interval = ceil_div(p.window, p.max)
      redis.call('SET', key, fmt(tat - p.cost * interval), 'KEEPTTL')
    end
  end,
}
