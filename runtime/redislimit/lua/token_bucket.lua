-- token-bucket: a HASH {t = tokens, s = time of t in µs}. Tokens are counted
-- in units of 1/window: a token is `window` units, the bucket holds
-- burst*window units and refills max units per µs, so all arithmetic is on
-- whole numbers (below 2^53, checked by the caller). A missing key is a full
-- bucket. Go twin: memory_tokenbucket.go.
--
-- A key with units out in leases (lua/lease.lua) holds 't:L:X' in t, which
-- tonumber rejects: L units are leased out until at the latest X µs, and
-- the bucket refills only up to burst - L, so that the bucket and the
-- leases together never hold more than burst. A plain key pays one test
-- for this.

algos[TOKEN_BUCKET] = function()
  return {
    check = function(key, p, now, v)
      local cap = p.burst * p.window
      local st = call('HMGET', key, 't', 's')
      local t, at = tonumber(st[1]), tonumber(st[2])
      local held, untl = 0, nil
      if t == nil and st[1] then
        -- Leased: the top is held tokens lower until untl, when every
        -- lease has ended and the top is burst again.
        local a, l, x = string.match(st[1], '^(-?%d+):(%d+):(%d+)$')
        t, held, untl = tonumber(a), tonumber(l), tonumber(x)
        if now >= untl then
          if at ~= nil and untl > at then
            t = math.min(t + (untl - at) * p.max, cap - held * p.window)
            at = untl
          end
          held, untl = 0, nil
        end
        cap = cap - held * p.window
      end
      v.held, v.untl = held, untl
      -- The level at now and the time it refers to, which never moves
      -- backwards: a clock behind the last writer's must not be refilled
      -- twice for the same microseconds.
      if t == nil or at == nil then
        t, at = cap, now
      elseif now > at then
        if now - at >= floordiv(cap - t + p.max - 1, p.max) then
          t = cap
        else
          t = t + (now - at) * p.max
        end
        at = now
      end
      local need = p.cost * p.window
      -- Refill starts at `at`, later than now only if another clock ran ahead.
      v.ok, v.remaining, v.retry, v.receipt = true, floordiv(t, p.window), 0, nil
      v.reset = at - now + floordiv(cap - t + p.max - 1, p.max)
      v.level, v.at = t, at
      if t < need then
        v.ok = false
        v.retry = at - now + floordiv(need - t + p.max - 1, p.max)
        -- A charge past the level leaves it below 0.
        if v.remaining < 0 then
          v.remaining = 0
        end
      end
    end,

    commit = function(key, p, now, v)
      local t = v.level - p.cost * p.window
      local life = v.at - now + floordiv((p.burst - v.held) * p.window - t + p.max - 1, p.max)
      -- t / window is check's level / window less cost: the level was at
      -- least cost*window, so taking whole tokens away leaves the same
      -- remainder.
      v.remaining = v.remaining - p.cost
      v.reset = life
      if v.untl then
        -- A leased key lives until its last lease ends.
        call('HSET', key, 't', string.format('%d:%d:%d', t, v.held, v.untl), 's', string.format('%d', v.at))
        life = math.max(life, v.untl - now)
      else
        call('HSET', key, 't', string.format('%d', t), 's', string.format('%d', v.at))
      end
      call('PEXPIRE', key, string.format('%d', floordiv(life + 999, 1000) + ttl_pad_ms))
    end,

    -- p.cost tokens back, up to the top: burst, less the units out in
    -- leases while they are (lua/lease.lua). The level is the one stored,
    -- at its time; refilling it first to now would come to the same, as
    -- both are capped at the top.
    refund = function(key, p, now)
      local raw = call('HGET', key, 't')
      local t = tonumber(raw)
      if t ~= nil then
        call('HSET', key, 't', string.format('%d', math.min(p.burst * p.window, t + p.cost * p.window)))
      elseif raw then
        local l, held, untl = string.match(raw, '^(-?%d+):(%d+):(%d+)$')
        l, held, untl = tonumber(l), tonumber(held), tonumber(untl)
        if now < untl then
          l = math.min((p.burst - held) * p.window, l + p.cost * p.window)
          call('HSET', key, 't', string.format('%d:%d:%d', l, held, untl))
        end
        -- Past untl the leases have ended, and check refills the
        -- level to untl first: the admission stays counted, erring
        -- toward denial.
      end
    end,
  }
end
