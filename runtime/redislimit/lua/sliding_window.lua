-- sliding-window: a HASH of bucket index -> count, 10 buckets per window of
-- ceil(window/10) µs each, aligned to the Unix epoch. The current bucket and
-- the 10 before it always cover the last window, so counting them all never
-- admits more than max in any window. Go twin: memory_slidingwindow.go.

local sw_buckets = 10

algos['sliding-window'] = {
  check = function(key, p, now)
    local b = ceil_div(p.window, sw_buckets)
    local cur = math.floor(now / b)
    local oldest = cur - sw_buckets
    local flat = redis.call('HGETALL', key)
    local counts = {}
    local idx = {}
    local count = 0
    local stale = {}
    for i = 1, #flat, 2 do
      local j = tonumber(flat[i])
      local n = tonumber(flat[i + 1])
      if j < oldest then
        stale[#stale + 1] = flat[i]
      elseif n > 0 then
        counts[j] = n
        idx[#idx + 1] = j
        count = count + n
      end
    end
    table.sort(idx)
    -- Record in the newest bucket seen, so that a clock behind another one
    -- never files an admission where it would stop counting early.
    local into = cur
    if #idx > 0 and idx[#idx] > into then
      into = idx[#idx]
    end
    local v = {b = b, into = into, count = count, remaining = math.max(0, p.max - count), retry = 0, reset = 0}
    if #idx > 0 then
      -- Bucket j stops counting when the current bucket index passes j+10.
      v.reset = (idx[#idx] + sw_buckets + 1) * b - now
    end
    if count + p.cost > p.max then
      local need = count + p.cost - p.max
      for _, j in ipairs(idx) do
        need = need - counts[j]
        if need <= 0 then
          v.retry = (j + sw_buckets + 1) * b - now
          break
        end
      end
      v.ok = false
    else
      v.ok = true
    end
    if #stale > 0 then
      v.stale = stale
    end
    return v
  end,

  settle = function(key, p, now, v)
    if v.stale ~= nil then
      redis.call('HDEL', key, unpack(v.stale))
    end
  end,

  commit = function(key, p, now, v)
    redis.call('HINCRBY', key, fmt(v.into), fmt(p.cost))
    if v.stale ~= nil then
      redis.call('HDEL', key, unpack(v.stale))
    end
    v.remaining = p.max - v.count - p.cost
    v.reset = (v.into + sw_buckets + 1) * v.b - now
    v.receipt = v.into
    redis.call('PEXPIRE', key, ttl_ms(v.reset))
  end,

  refund = function(key, p, now)
    local f = fmt(p.receipt)
    if redis.call('HEXISTS', key, f) == 1 then
      redis.call('HINCRBY', key, f, fmt(-p.cost))
    end
  end,
}
