-- token-bucket: a HASH {t = tokens, s = time of t in µs}. Tokens are counted
-- in units of 1/window: a token is `window` units, the bucket holds
-- burst*window units and refills max units per µs, so all arithmetic is on
-- whole numbers (below 2^53, checked by the caller). A missing key is a full
-- bucket. Go twin: memory_tokenbucket.go.

-- tb_level returns the bucket's level at now and the time it refers to,
-- which never moves backwards: a clock behind the last writer's must not be
-- refilled twice for the same microseconds.
local function tb_level(key, p, now)
  local cap = p.burst * p.window
  local st = redis.call('HMGET', key, 't', 's')
  local t, s = tonumber(st[1]), tonumber(st[2])
  if t == nil or s == nil then
    return cap, now
  end
  if now <= s then
    return t, s
  end
  if now - s >= ceil_div(cap - t, p.max) then
    return cap, now
  end
  return t + (now - s) * p.max, now
end

algos['token-bucket'] = {
  check = function(key, p, now)
    local cap = p.burst * p.window
    local t, at = tb_level(key, p, now)
    local need = p.cost * p.window
    -- Refill starts at `at`, later than now only if another clock ran ahead.
    local v = {level = t, at = at, remaining = math.floor(t / p.window), retry = 0,
      reset = at - now + ceil_div(cap - t, p.max)}
    if t < need then
      v.ok = false
      v.retry = at - now + ceil_div(need - t, p.max)
      return v
    end
    v.ok = true
    return v
  end,

  commit = function(key, p, now, v)
    local cap = p.burst * p.window
    local t = v.level - p.cost * p.window
    redis.call('HSET', key, 't', fmt(t), 's', fmt(v.at))
    v.remaining = math.floor(t / p.window)
    v.reset = v.at - now + ceil_div(cap - t, p.max)
    redis.call('PEXPIRE', key, ttl_ms(v.reset))
  end,

  refund = function(key, p, now)
    local st = redis.call('HMGET', key, 't', 's')
    local t = tonumber(st[1])
    if t ~= nil then
      redis.call('HSET', key, 't', fmt(math.min(p.burst * p.window, t + p.cost * p.window)))
    end
  end,
}
