-- sliding-window: a HASH of bucket index -> count, 10 buckets per window of
-- ceil(window/10) µs each, aligned to the Unix epoch. The current bucket and
-- the 10 before it always cover the last window, so counting them all never
-- admits more than max in any window. Go twin: memory_slidingwindow.go.

algos[SLIDING_WINDOW] = function()
  return {
    check = function(key, p, now, v)
      local b = floordiv(p.window + 10 - 1, 10)
      local cur = floordiv(now, b)
      local oldest = cur - 10
      local flat = call('HGETALL', key)
      -- The buckets still counting, non-empty (a refund can empty one): k
      -- of them, indexes idx[1..k] with counts cnt[1..k], in ascending order
      -- once sorted. A compact hash lists its fields in the order they were
      -- added, which is ascending here (commit adds a bucket only after every
      -- one seen); a larger encoding's order is arbitrary.
      local idx, cnt, k, stale = {}, {}, 0, nil
      local count = 0
      local sorted = true
      local newest = nil
      for i = 1, #flat, 2 do
        local j = tonumber(flat[i])
        if j < oldest then
          if stale == nil then
            stale = {flat[i]}
          else
            stale[#stale + 1] = flat[i]
          end
        else
          local n = tonumber(flat[i + 1])
          if n > 0 then
            if newest ~= nil and j < newest then
              sorted = false
            else
              newest = j
            end
            k = k + 1
            idx[k] = j
            cnt[k] = n
            count = count + n
          end
        end
      end
      if not sorted then
        local counts = {}
        for i = 1, k do
          counts[idx[i]] = cnt[i]
        end
        table.sort(idx)
        for i = 1, k do
          cnt[i] = counts[idx[i]]
        end
      end
      -- Record in the newest bucket seen, so that a clock behind another one
      -- never files an admission where it would stop counting early.
      local into = cur
      if newest ~= nil and newest > into then
        into = newest
      end
      v.ok, v.remaining, v.retry, v.reset, v.receipt = true, p.max - count, 0, 0, nil
      v.b, v.into, v.stale = b, into, stale
      if newest ~= nil then
        -- Bucket j stops counting when the current bucket index passes j+10.
        v.reset = (newest + 10 + 1) * b - now
      end
      if count + p.cost > p.max then
        local need = count + p.cost - p.max
        for i = 1, k do
          need = need - cnt[i]
          if need <= 0 then
            v.retry = (idx[i] + 10 + 1) * b - now
            break
          end
        end
        v.ok = false
        if v.remaining < 0 then
          v.remaining = 0
        end
      end
    end,

    settle = function(key, v)
      if v.stale ~= nil then
        call('HDEL', key, unpack(v.stale))
      end
    end,

    commit = function(key, p, now, v)
      call('HINCRBY', key, string.format('%d', v.into), string.format('%d', p.cost))
      if v.stale ~= nil then
        call('HDEL', key, unpack(v.stale))
      end
      -- check's remaining was max-count, unclamped as count+cost <= max.
      v.remaining = v.remaining - p.cost
      v.reset = (v.into + 10 + 1) * v.b - now
      v.receipt = v.into
      call('PEXPIRE', key, string.format('%d', floordiv(v.reset + 999, 1000) + ttl_pad_ms))
    end,

    -- Only while the receipt's bucket still counts, and never below 0.
    refund = function(key, p, now)
      if p.receipt < floordiv(now, floordiv(p.window + 10 - 1, 10)) - 10 then
        return
      end
      local f = string.format('%d', p.receipt)
      local n = math.min(tonumber(call('HGET', key, f)) or 0, p.cost)
      if n > 0 then
        call('HINCRBY', key, f, string.format('%d', -n))
      end
    end,
  }
end
