-- calendar-window: a fixed window whose windows are a calendar's periods in
-- a time zone (runtime.Calendar). A HASH {w = window start µs, e = its end
-- µs, n = count} per key. Lua has no time zone database, so the client
-- sends the boundaries around its own now (calendar.go): p.prev, p.window
-- (the current window's start), p.burst (its end) and p.next, and the
-- script picks the window of the three that holds its own now. Go twin:
-- memlimit/calendarwindow.go.

algos[CALENDAR_WINDOW] = function()
  -- pick returns the window given that holds now, and now itself; or, for
  -- a now outside them (a client clock off Redis's by more than a window),
  -- the nearest window given and its nearest instant, which the algorithm
  -- then decides at.
  local function pick(p, now)
    local w, e = p.window, p.burst
    if now < w then
      w, e = p.prev, p.window
    elseif now >= e then
      w, e = p.burst, p.next
    end
    if now < w then
      now = w
    elseif now >= e then
      now = e - 1
    end
    return w, e, now
  end

  return {
    check = function(key, p, now, v)
      local w, e, at = pick(p, now)
      local st = call('HMGET', key, 'w', 'e', 'n')
      local sw = tonumber(st[1])
      local count = 0
      -- v.same says the key holds the window counted in (ours, or a later
      -- one), whose count commit then increments.
      v.ok, v.remaining, v.retry, v.reset, v.receipt = true, p.max, 0, 0, nil
      if sw ~= nil and sw >= w then
        -- A window later than ours was written by a clock ahead of ours:
        -- keep counting in it rather than reopen an earlier one.
        w, e, count = sw, tonumber(st[2]), tonumber(st[3])
        v.same = true
      else
        v.same = false
      end
      v.w, v.e = w, e
      local ends = e - at
      v.remaining = p.max - count
      if count > 0 then
        v.reset = ends
      end
      if count + p.cost > p.max then
        v.ok = false
        v.retry = ends
        if v.remaining < 0 then
          v.remaining = 0
        end
      end
    end,

    commit = function(key, p, now, v)
      if v.same then
        call('HINCRBY', key, 'n', string.format('%d', p.cost))
      else
        call('HSET', key, 'w', string.format('%d', v.w), 'e', string.format('%d', v.e), 'n', string.format('%d', p.cost))
      end
      local _, _, at = pick(p, now)
      -- check's remaining was max-count, unclamped as count+cost <= max.
      v.remaining = v.remaining - p.cost
      v.reset = v.e - at
      v.receipt = v.w
      -- The key lives until the window's end on Redis's own clock (now,
      -- not at), so that a count is never forgotten while it counts. A
      -- window that ended on Redis's clock (a client far behind it) keeps
      -- its count for its length: such a client admits at most max per
      -- window's length, not max per call.
      local life = v.e - now
      if life < v.reset then
        life = v.e - v.w
      end
      call('PEXPIRE', key, string.format('%d', floordiv(life + 999, 1000) + ttl_pad_ms))
    end,

    -- Only while the receipt's window is the current one (the stored
    -- window, not behind now's), and never below 0.
    refund = function(key, p, now)
      local w = pick(p, now)
      if p.receipt < w then
        return
      end
      local st = call('HMGET', key, 'w', 'n')
      if tonumber(st[1]) == p.receipt then
        local n = math.min(tonumber(st[2]) or 0, p.cost)
        if n > 0 then
          call('HINCRBY', key, 'n', string.format('%d', -n))
        end
      end
    end,
  }
end
