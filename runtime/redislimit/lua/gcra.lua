-- gcra: a string holding the theoretical arrival time (TAT) in µs. Calls
-- are spaced by ceil(window/max) µs with a tolerance of burst intervals.
-- One GET, and one SET when admitting. Go twin: memory_gcra.go.

-- gcra_read reads key's TAT and returns, for a call of cost at now: whether
-- it has room, the remaining calls before it (unclamped), the µs until room
-- when it has none, the µs until the state empties, and the TAT that
-- admitting it would leave.
local function gcra_read(key, now, window, max, burst, cost)
  local interval = floordiv(window + max - 1, max)
  local tolerance = burst * interval
  local tat = tonumber(call('GET', key))
  if tat == nil or tat < now then
    tat = now
  end
  local new = tat + cost * interval
  local remaining = floordiv(tolerance - (tat - now), interval)
  if new - now > tolerance then
    return false, remaining, new - tolerance - now, tat - now, new
  end
  return true, remaining, 0, tat - now, new
end

-- gcra_write records an admission: the TAT new, kept until it passes. An
-- admitted call left at least cost intervals of tolerance, so what remains
-- is gcra_read's remaining less cost, which it did not clamp.
--
-- In a batch the calls of fresh keys leave the same TAT and lifetime, so
-- each is formatted again only when it changes.
local gcra_tat, gcra_tat_s, gcra_px, gcra_px_s
local function gcra_write(key, now, new)
  if new ~= gcra_tat then
    gcra_tat, gcra_tat_s = new, string.format('%d', new)
  end
  local px = floordiv(new - now + 999, 1000) + ttl_pad_ms
  if px ~= gcra_px then
    gcra_px, gcra_px_s = px, string.format('%d', px)
  end
  call('SET', key, gcra_tat_s, 'PX', gcra_px_s)
end

-- decide1 is check and commit for a call of this one enforced limit, as
-- main.lua's fast path wants them: no tables.
decide1s[5] = function(key, now, window, max, burst, cost)
  local ok, remaining, retry, reset, new = gcra_read(key, now, window, max, burst, cost)
  if not ok then
    if remaining < 0 then
      remaining = 0
    end
    return false, remaining, retry, reset, 0
  end
  gcra_write(key, now, new)
  return true, remaining - cost, 0, new - now, 0
end

-- A lone call never reaches these (see lone in header.lua).
if not lone then
  algos[5] = function()
    return {
      check = function(key, p, now, v)
        local ok, remaining, retry, reset, new = gcra_read(key, now, p.window, p.max, p.burst, p.cost)
        if not ok and remaining < 0 then
          remaining = 0
        end
        v.ok, v.remaining, v.retry, v.reset, v.receipt, v.new = ok, remaining, retry, reset, nil, new
      end,

      commit = function(key, p, now, v)
        gcra_write(key, now, v.new)
        v.remaining = v.remaining - p.cost
        v.reset = v.new - now
      end,

      refund = function(key, p, now)
        local tat = tonumber(call('GET', key))
        if tat ~= nil then
          local interval = floordiv(p.window + p.max - 1, p.max)
          call('SET', key, string.format('%d', tat - p.cost * interval), 'KEEPTTL')
        end
      end,
    }
  end
end
