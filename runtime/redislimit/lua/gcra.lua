-- gcra: a string holding the theoretical arrival time (TAT) in µs. Calls
-- are spaced by ceil(window/max) µs with a tolerance of burst intervals.
-- One GET, and one SET when admitting. Go twin: memory_gcra.go.
--
-- A key with units out in leases (lua/lease.lua) holds 'TAT:L:X' instead,
-- which tonumber rejects: L units are leased out until at the latest X µs,
-- and the TAT never falls below now + L intervals, so that the bucket and
-- the leases together never hold more than burst. A plain key pays one
-- test for this.

-- gcra_write records an admission: the TAT new, kept until it passes.
--
-- In a batch the calls of fresh keys leave the same TAT and lifetime, so
-- each is formatted again only when it changes. (floordiv is written out
-- here and in decide1: each Lua function call costs Redis hundreds of
-- instructions, and these run for every decision.)
local gcra_tat, gcra_tat_s, gcra_px, gcra_px_s
local function gcra_write(key, now, new, held, untl)
  if untl then
    -- A leased key lives until its last lease ends, whatever its TAT.
    local px = math.max(new, untl) - now + 999
    call('SET', key, string.format('%d:%d:%d', new, held, untl), 'PX', string.format('%d', (px - px % 1000) / 1000 + ttl_pad_ms))
    return
  end
  if new ~= gcra_tat then
    gcra_tat, gcra_tat_s = new, string.format('%d', new)
  end
  local px = new - now + 999
  px = (px - px % 1000) / 1000 + ttl_pad_ms
  if px ~= gcra_px then
    gcra_px, gcra_px_s = px, string.format('%d', px)
  end
  call('SET', key, gcra_tat_s, 'PX', gcra_px_s)
end

-- gcra_decide1, GCRA's decide1, is check and commit for a call of this one
-- enforced limit, as main.lua's fast path wants them: no tables. With peek
-- it is check alone, for algos[GCRA]: it records nothing, and returns for
-- an admitted call the remaining calls before it (unclamped: it left at
-- least cost intervals of tolerance, so commit subtracts cost), the µs
-- until the state empties before it, and the TAT that admitting it leaves.
local function gcra_decide1(key, now, window, max, burst, cost, alone, peek)
  local interval = window + max - 1
  interval = (interval - interval % max) / max
  local tolerance = burst * interval
  local raw = call('GET', key)
  local tat = tonumber(raw)
  local held, untl = 0, nil
  if tat == nil and raw then
    -- Leased: the bucket's top is held intervals lower until untl, when
    -- every lease has ended and the top is burst again.
    local a, l, x = string.match(raw, '^(-?%d+):(%d+):(%d+)$')
    tat, held, untl = tonumber(a), tonumber(l), tonumber(x)
    if now >= untl then
      tat = math.max(tat, untl + held * interval)
      held, untl = 0, nil
    end
  end
  if tat == nil or tat < now + held * interval then
    tat = now + held * interval
  end
  local new = tat + cost * interval
  local remaining = tolerance - (tat - now)
  remaining = (remaining - remaining % interval) / interval
  if new - now > tolerance then
    if remaining < 0 then
      remaining = 0
    end
    return false, remaining, new - tolerance - now, tat - now, 0
  end
  if peek then
    return true, remaining, 0, tat - now, new, held, untl
  end
  gcra_write(key, now, new, held, untl)
  return true, remaining - cost, 0, new - now, 0
end
decide1s[GCRA] = gcra_decide1

-- A lone call never reaches these (see lone in header.lua).
if not lone then
  algos[GCRA] = function()
    return {
      check = function(key, p, now, v)
        v.ok, v.remaining, v.retry, v.reset, v.new, v.held, v.untl = gcra_decide1(key, now, p.window, p.max, p.burst, p.cost, false, true)
        v.receipt = nil
      end,

      commit = function(key, p, now, v)
        gcra_write(key, now, v.new, v.held, v.untl)
        v.remaining = v.remaining - p.cost
        v.reset = v.new - now
      end,

      -- The TAT p.cost intervals earlier, never before now (now plus the
      -- intervals out in leases while they are, lua/lease.lua).
      refund = function(key, p, now)
        local raw = call('GET', key)
        local tat = tonumber(raw)
        local interval = floordiv(p.window + p.max - 1, p.max)
        if tat ~= nil then
          if tat > now then
            call('SET', key, string.format('%d', math.max(now, tat - p.cost * interval)), 'KEEPTTL')
          end
        elseif raw then
          local a, held, untl = string.match(raw, '^(-?%d+):(%d+):(%d+)$')
          tat, held, untl = tonumber(a), tonumber(held), tonumber(untl)
          -- Past untl the leases have ended, and check moves the TAT to
          -- untl plus their intervals first: the admission stays
          -- counted, erring toward denial.
          local floor = now + held * interval
          if now < untl and tat > floor then
            call('SET', key, string.format('%d:%d:%d', math.max(floor, tat - p.cost * interval), held, untl), 'KEEPTTL')
          end
        end
      end,

      -- The TAT p.cost intervals later, from now at the earliest, room or
      -- none.
      -- (The TAT as gcra_decide1 reads it, written out: decide1, every
      -- lone decision, calls no Lua function, and returns no TAT past the
      -- tolerance.)
      charge = function(key, p, now)
        local interval = floordiv(p.window + p.max - 1, p.max)
        local raw = call('GET', key)
        local tat = tonumber(raw)
        local held, untl = 0, nil
        if tat == nil and raw then
          local a, l, x = string.match(raw, '^(-?%d+):(%d+):(%d+)$')
          tat, held, untl = tonumber(a), tonumber(l), tonumber(x)
          if now >= untl then
            tat = math.max(tat, untl + held * interval)
            held, untl = 0, nil
          end
        end
        if tat == nil or tat < now + held * interval then
          tat = now + held * interval
        end
        gcra_write(key, now, tat + p.cost * interval, held, untl)
      end,
    }
  end
end
