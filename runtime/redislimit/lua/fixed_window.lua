-- fixed-window: a HASH {w = window index, n = count} per key, windows aligned
-- to the Unix epoch. Go twin: memory_fixedwindow.go.

algos[FIXED_WINDOW] = function()
  return {
    check = function(key, p, now, v)
      local w = floordiv(now, p.window)
      local st = call('HMGET', key, 'w', 'n')
      local sw = tonumber(st[1])
      local count = 0
      -- v.same says the key holds the window counted in (ours, or a later
      -- one), whose count commit then increments.
      v.ok, v.remaining, v.retry, v.reset, v.receipt = true, p.max, 0, 0, nil
      v.w, v.same = w, false
      if sw ~= nil and sw >= w then
        -- A window later than ours was written by a clock ahead of ours: keep
        -- counting in it rather than reopen an earlier one.
        w = sw
        count = tonumber(st[2])
        v.w = w
        v.same = true
      end
      local ends = (w + 1) * p.window - now
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
        call('HSET', key, 'w', string.format('%d', v.w), 'n', string.format('%d', p.cost))
      end
      -- check's remaining was max-count, unclamped as count+cost <= max.
      v.remaining = v.remaining - p.cost
      v.reset = (v.w + 1) * p.window - now
      v.receipt = v.w
      call('PEXPIRE', key, string.format('%d', floordiv(v.reset + 999, 1000) + ttl_pad_ms))
    end,

    -- Only while the receipt's window is the current one (the stored
    -- window, not behind now's), and never below 0.
    refund = function(key, p, now)
      if p.receipt < floordiv(now, p.window) then
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
