-- sliding-log: exact. Each key's log is one string: a ring of the
-- admissions in µs, oldest first, every unit of a call at the call's time,
-- after a 20-byte header. Go twin: memory_slidinglog.go.
--
--   header  struct '<I4I4I4i8': start, n, cap, newest
--   slots   cap of them, 7 bytes each ('<i7', a signed 56-bit µs time,
--           good for a thousand years after the Unix epoch), from byte 20
--
-- Entry i (0 oldest, n-1 newest) is in slot (start+i) % cap; newest is
-- entry n-1's time, read with the header. Times never decrease along the
-- ring, and each call's is later than every entry before it, so a call's
-- time is its receipt: its admissions are the entries of that time. Seven
-- bytes rather than eight keep a full log of Max 1,000 in jemalloc's 7 KiB
-- class.
--
-- The window is (now-window, now]: an admission at s stops counting at
-- s+window, and the entries still counting are the last count of the ring.
-- A call of cost c has room exactly when count+c <= max; when it has none,
-- room comes when entry n+c-max-1 stops counting. Only the number of
-- entries still counting, for remaining, needs a search: a binary search,
-- when the oldest stopped counting and the newest did not.
--
-- A log of max <= 128 (at most 916 bytes, or what a larger max left) is
-- read whole with GET and written whole with SET PX, canonically: start
-- 0, cap n, the entries that stopped counting dropped. A decision is then
-- TIME, GET and, when admitting, SET: GCRA's commands. A larger log is
-- read with GETRANGE (its header, its oldest 32 entries, those a binary
-- search reads when all 32 stopped counting, the one a denial waits for)
-- and written in place with SETRANGE (the entries, once or twice when they
-- wrap, then the header) and PEXPIRE, so that its Redis time and what a
-- replica receives do not grow with max; it grows its cap by doubling, up
-- to max, in a string made at its exact length. A call of cost c writes c
-- entries of one packed time, 4,096 at a time (see sl_fill).
--
-- A key that an older release wrote as a ZSET of µs members (score and
-- member alike, one per unit) is read as the ring of its members still
-- counting, and the first admission replaces it with the string.
--
-- Every decision drops the entries that stopped counting, as the in-memory
-- twin does: an admission as it writes, a denial (and a check) after the
-- batch, so that the first write of a script call is still a commit's (see
-- main.lua), with a SET KEEPTTL of what still counts, or a SETRANGE of the
-- header. A denial with nothing to drop writes nothing.

-- sl_more returns the functions for every log and every call, built on
-- first use: decide1 below decides the commonest calls itself, and each
-- function a run defines costs it an allocation and its collection.
local sl_lib
local function sl_more()
  if sl_lib then
    return sl_lib
  end
  -- sl_at returns entry i of the ring whose header is start and cap: from s,
  -- the whole string, or else read from key.
  local function sl_at(key, s, start, cap, i)
    local slot = start + i
    if slot >= cap then
      slot = slot - cap
    end
    local off = 20 + 7 * slot
    if s then
      return (struct.unpack('<i7', s, off + 1))
    end
    return (struct.unpack('<i7', call('GETRANGE', key, string.format('%d', off), string.format('%d', off + 6))))
  end

  -- sl_first returns the first entry in [lo, hi] later than v, given that
  -- entry lo is not and entry hi is.
  local function sl_first(key, s, start, cap, lo, hi, v)
    while hi - lo > 1 do
      local mid = lo + hi
      mid = (mid - mid % 2) / 2
      if sl_at(key, s, start, cap, mid) > v then
        hi = mid
      else
        lo = mid
      end
    end
    return hi
  end

  -- sl_bytes returns entries i to j-1 of the ring in s, as stored.
  local function sl_bytes(s, start, cap, i, j)
    if i >= j then
      return ''
    end
    local a, b = start + i, start + j
    if a >= cap then
      a, b = a - cap, b - cap
    end
    if b <= cap then
      return string.sub(s, 21 + 7 * a, 20 + 7 * b)
    end
    return string.sub(s, 21 + 7 * a, 20 + 7 * cap) .. string.sub(s, 21, 20 + 7 * (b - cap))
  end

  -- sl_legacy returns, as a ring string, the members of the ZSET at key that
  -- still count at upto.
  local function sl_legacy(key, upto)
    local m = call('ZRANGEBYSCORE', key, '(' .. string.format('%d', upto), '+inf')
    local parts = {struct.pack('<I4I4I4i8', 0, #m, #m, #m > 0 and tonumber(m[#m]) or 0)}
    for i = 1, #m do
      parts[i + 1] = struct.pack('<i7', tonumber(m[i]))
    end
    return table.concat(parts)
  end

  -- sl_load reads the log at key: s (the whole string, or false when only
  -- its header was read), its header, and whether it is a ZSET to replace.
  local function sl_load(key, upto, max)
    local s, legacy
    if max <= 128 then
      s = redis.pcall('GET', key)
    else
      s = redis.pcall('GETRANGE', key, '0', '19')
    end
    if type(s) == 'table' then
      if not string.find(s.err, '^WRONGTYPE') then
        error(s)
      end
      s, legacy = sl_legacy(key, upto), true
    end
    if not s or #s < 20 then
      return false, 0, 0, 0, 0, legacy
    end
    local start, n, cap, newest = struct.unpack('<I4I4I4i8', s)
    if max > 128 and not legacy then
      s = false
    end
    return s, start, n, cap, newest, legacy
  end

  -- sl_read decides a call of cost at now. It returns whether it has room,
  -- the remaining calls before it (clamped at 0 when it has none), the µs
  -- until room when it has none and until the log empties, then the log as
  -- sl_load read it and the first entry still counting, f, for sl_write and
  -- sl_cut.
  local function sl_read(key, now, window, max, cost)
    local upto = now - window
    local s, start, n, cap, newest, legacy = sl_load(key, upto, max)
    local f, reset = n, 0
    if n > 0 and newest > upto then
      if s then
        if sl_at(key, s, start, cap, 0) > upto then
          f = 0
        else
          f = sl_first(key, s, start, cap, 0, n - 1, upto)
        end
      else
        -- The oldest entries up to 32, in one read: a busy log drops a
        -- few at each admission.
        local m = cap - start
        if m > n then
          m = n
        end
        if m > 32 then
          m = 32
        end
        local b = call('GETRANGE', key, string.format('%d', 20 + 7 * start), string.format('%d', 19 + 7 * (start + m)))
        f = -1
        for i = 0, m - 1 do
          if struct.unpack('<i7', b, 1 + 7 * i) > upto then
            f = i
            break
          end
        end
        if f < 0 then
          f = sl_first(key, s, start, cap, m - 1, n - 1, upto)
        end
      end
    end
    local count = n - f
    if count > 0 then
      reset = newest + window - now
    end
    local remaining = max - count
    if count + cost <= max then
      return true, remaining, 0, reset, s, start, n, cap, newest, f, legacy
    end
    if remaining < 0 then
      remaining = 0
    end
    return false, remaining, sl_at(key, s, start, cap, n + cost - max - 1) + window - now, reset, s, start, n, cap, newest, f, legacy
  end

  -- sl_cut drops from the log, as sl_load read it, its first f entries,
  -- which stopped counting at upto, as a decision that records nothing does:
  -- entries that stopped counting are gone even if the clock steps back, as
  -- they are from the in-memory twin.
  local function sl_cut(key, upto, s, start, n, cap, newest, f, legacy)
    if legacy then
      call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', upto))
    elseif f == n then
      call('DEL', key)
    elseif s then
      local k = n - f
      call('SET', key, struct.pack('<I4I4I4i8', 0, k, k, newest) .. sl_bytes(s, start, cap, f, n), 'KEEPTTL')
    else
      start = start + f
      if start >= cap then
        start = start - cap
      end
      call('SETRANGE', key, '0', struct.pack('<I4I4I4i8', start, n - f, cap, newest))
    end
  end

  -- sl_rep returns before, s repeated n times, then after. Lua 5.1's
  -- string.rep copies s a byte at a time into a buffer that it merges as
  -- it grows; doubling copies each byte about twice, and the last
  -- concatenation takes before and after along.
  local function sl_rep(s, n, before, after)
    if n <= 64 then
      return before .. string.rep(s, n) .. after
    end
    local r, k = s, 1
    while k * 2 <= n do
      r, k = r .. r, k * 2
    end
    if k < n then
      return before .. r .. string.sub(r, 1, #s * (n - k)) .. after
    end
    return before .. r .. after
  end

  -- sl_fill writes n entries e (one packed time) into the ring of cap
  -- slots from slot at on, wrapping, with SETRANGEs of 4,096 entries at
  -- most: no string of more than 28 KB is built, copied or replicated.
  local function sl_fill(key, at, e, n, cap)
    local chunk = sl_rep(e, n < 4096 and n or 4096, '', '')
    while n > 0 do
      local m = cap - at
      if m > n then
        m = n
      end
      if m > 4096 then
        m = 4096
      end
      if 7 * m < #chunk then
        call('SETRANGE', key, string.format('%d', 20 + 7 * at), string.sub(chunk, 1, 7 * m))
      else
        call('SETRANGE', key, string.format('%d', 20 + 7 * at), chunk)
      end
      at, n = at + m, n - m
      if at >= cap then
        at = at - cap
      end
    end
  end

  -- sl_write records a call that sl_read found room for, and returns the
  -- remaining calls, the µs until the log empties, and the receipt.
  local function sl_write(key, now, window, max, cost, remaining, s, start, n, cap, newest, f, legacy)
    local t = now
    if newest >= t then
      t = newest + 1
    end
    local reset = t + window - now
    -- floordiv, written out as in gcra.lua.
    local px = reset + 999
    px = (px - px % 1000) / 1000 + ttl_pad_ms
    local count = n - f
    local e = struct.pack('<i7', t)
    if s or count == 0 and (cost <= 4096 or cap > 0 and cap < cost) then
      -- Whole: the entries still counting, then this call's.
      local k = count + cost
      call('SET', key, sl_rep(e, cost, struct.pack('<I4I4I4i8', 0, k, k, t) .. (count > 0 and sl_bytes(s, start, cap, f, n) or ''), ''),
        'PX', string.format('%d', px))
      return remaining - cost, reset, t
    end
    if count == 0 then
      -- A large cost on a log with nothing counting: in place from slot 0,
      -- in the ring there is, or in one made at its exact length by the
      -- SETRANGE of its last slot.
      if cap == 0 then
        cap = cost
        call('SETRANGE', key, string.format('%d', 13 + 7 * cost), e)
        sl_fill(key, 0, e, cost - 1, cap)
      else
        sl_fill(key, 0, e, cost, cap)
      end
      call('SETRANGE', key, '0', struct.pack('<I4I4I4i8', 0, cost, cap, t))
      call('PEXPIRE', key, string.format('%d', px))
      return remaining - cost, reset, t
    end
    -- In place: the entries that stopped counting are dropped from the front.
    start = start + f
    if start >= cap then
      start = start - cap
    end
    if count + cost > cap then
      -- Grow: what counts moves to the front of a ring of twice the slots,
      -- up to max, made at its exact length. It goes through Lua in reads
      -- of 4,096 entries, and the first write is a SETRANGE that changes
      -- nothing, for Redis to refuse when out of memory before the DEL.
      local newcap = cap * 2
      if newcap > max then
        newcap = max
      end
      if newcap < count + cost then
        newcap = count + cost
      end
      local kept, i = {}, 0
      while i < count do
        local a, m = start + i, count - i
        if a >= cap then
          a = a - cap
        end
        if m > cap - a then
          m = cap - a
        end
        if m > 4096 then
          m = 4096
        end
        kept[#kept + 1] = call('GETRANGE', key, string.format('%d', 20 + 7 * a), string.format('%d', 19 + 7 * (a + m)))
        i = i + m
      end
      call('SETRANGE', key, '0', '')
      call('DEL', key)
      call('SETRANGE', key, string.format('%d', 13 + 7 * newcap), '\0\0\0\0\0\0\0')
      local at = 20
      for _, b in ipairs(kept) do
        call('SETRANGE', key, string.format('%d', at), b)
        at = at + #b
      end
      sl_fill(key, count, e, cost, newcap)
      call('SETRANGE', key, '0', struct.pack('<I4I4I4i8', 0, count + cost, newcap, t))
      call('PEXPIRE', key, string.format('%d', px))
      return remaining - cost, reset, t
    end
    local at = start + count
    if at >= cap then
      at = at - cap
    end
    sl_fill(key, at, e, cost, cap)
    call('SETRANGE', key, '0', struct.pack('<I4I4I4i8', start, count + cost, cap, t))
    call('PEXPIRE', key, string.format('%d', px))
    return remaining - cost, reset, t
  end

  -- A denied call that leaves entries to drop returns what settle needs,
  -- for main.lua to settle it after the batch, or drops them at once when
  -- alone.
  local function sl_decide1(key, now, window, max, burst, cost, alone)
    local ok, remaining, retry, reset, s, start, n, cap, newest, f, legacy = sl_read(key, now, window, max, cost)
    if not ok then
      local keep
      if f > 0 then
        if alone then
          sl_cut(key, now - window, s, start, n, cap, newest, f, legacy)
        else
          keep = {upto = now - window, lmax = max}
        end
      end
      return false, remaining, retry, reset, 0, keep
    end
    local receipt
    remaining, reset, receipt = sl_write(key, now, window, max, cost, remaining, s, start, n, cap, newest, f, legacy)
    return true, remaining, 0, reset, receipt
  end

  sl_lib = {at = sl_at, first = sl_first, load = sl_load, read = sl_read, write = sl_write, cut = sl_cut,
    bytes = sl_bytes, decide1 = sl_decide1}
  return sl_lib
end

-- decide1 decides itself a call of a log of max <= 128 read whole with
-- start 0 (every such log but one a larger max left, or a ZSET), with no
-- Lua function call: what sl_read, sl_write and sl_cut do for it, written
-- out. In a batch the calls share their time, and those of fresh keys
-- their string and lifetime, so each is packed or formatted again only
-- when it changes.
local sl_t, sl_fresh, sl_px, sl_px_s
decide1s[SLIDING_LOG] = function(key, now, window, max, burst, cost, alone)
  local s = max > 128 or redis.pcall('GET', key)
  if s ~= true and type(s) ~= 'table' then
    -- The header and the oldest entries, up to 4, in one call into C: a
    -- busy log drops one or two at each admission.
    local start, n, cap, newest, oldest, e1, e2, e3 = 0, 0, 0, 0, 0
    if not s then
      -- A new log.
    elseif #s >= 48 then
      start, n, cap, newest, oldest, e1, e2, e3 = struct.unpack('<I4I4I4i8i7i7i7i7', s)
    else
      start, n, cap, newest, oldest = struct.unpack('<I4I4I4i8i7', s)
    end
    if start == 0 then
      local upto = now - window
      local f = 0
      if n > 0 and oldest <= upto then
        -- Entries 0 to n-1 are in slots 0 to n-1. Entry 0 stopped
        -- counting: if entry n-1 did not, there are at least two, and
        -- an entry read that stopped counting is not the last.
        if newest <= upto then
          f = n
        elseif e1 and e1 > upto then
          f = 1
        elseif e1 and e2 > upto then
          f = 2
        elseif e1 and e3 > upto then
          f = 3
        else
          -- sl_first: entry lo stopped counting, entry hi did not.
          local lo, hi = e1 and 3 or 0, n - 1
          while hi - lo > 1 do
            local mid = lo + hi
            mid = (mid - mid % 2) / 2
            if struct.unpack('<i7', s, 21 + 7 * mid) > upto then
              hi = mid
            else
              lo = mid
            end
          end
          f = hi
        end
      end
      local count = n - f
      if count + cost > max then
        -- count > 0, as cost <= max.
        local remaining = max - count
        if remaining < 0 then
          remaining = 0
        end
        local keep
        if f > 0 then
          if alone then
            call('SET', key, struct.pack('<I4I4I4i8', 0, count, count, newest) .. string.sub(s, 21 + 7 * f, 20 + 7 * n), 'KEEPTTL')
          else
            keep = {upto = upto, lmax = max}
          end
        end
        return false, remaining, struct.unpack('<i7', s, 21 + 7 * (n + cost - max - 1)) + window - now, newest + window - now, 0, keep
      end
      local t = now
      if newest >= t then
        t = newest + 1
      end
      local reset = t + window - now
      -- floordiv, written out as in gcra.lua.
      local px = reset + 999
      px = (px - px % 1000) / 1000 + ttl_pad_ms
      if px ~= sl_px then
        sl_px, sl_px_s = px, string.format('%d', px)
      end
      if count == 0 and cost == 1 then
        if t ~= sl_t then
          sl_t, sl_fresh = t, struct.pack('<I4I4I4i8i7', 0, 1, 1, t, t)
        end
        call('SET', key, sl_fresh, 'PX', sl_px_s)
      else
        local e = struct.pack('<i7', t)
        if cost > 1 then
          e = string.rep(e, cost)
        end
        local k = count + cost
        if count > 0 then
          e = string.sub(s, 21 + 7 * f, 20 + 7 * n) .. e
        end
        call('SET', key, struct.pack('<I4I4I4i8', 0, k, k, t) .. e, 'PX', sl_px_s)
      end
      return true, max - count - cost, 0, reset, t
    end
  end
  return sl_more().decide1(key, now, window, max, burst, cost, alone)
end

-- A lone call never reaches these (see lone in header.lua).
if not lone then
  algos[SLIDING_LOG] = function()
    local sl_at, sl_first, sl_load, sl_read, sl_write, sl_cut, sl_bytes = sl_more().at, sl_lib.first, sl_lib.load, sl_lib.read, sl_lib.write, sl_lib.cut, sl_lib.bytes
    return {
      check = function(key, p, now, v)
        v.ok, v.remaining, v.retry, v.reset, v.s, v.start, v.n, v.cap, v.newest, v.f, v.legacy = sl_read(key, now, p.window, p.max, p.cost)
        v.receipt, v.upto, v.lmax = nil, now - p.window, p.max
      end,

      -- settle may run after later calls of the same script recorded in
      -- this log, so it reads it again. Entries that stopped counting at
      -- check's upto are still the first ones, and there are none to drop
      -- if check found none.
      settle = function(key, v)
        if v.f == 0 then
          return
        end
        local s, start, n, cap, newest, legacy = sl_load(key, v.upto, v.lmax)
        if legacy then
          sl_cut(key, v.upto, s, start, n, cap, newest, 0, true)
          return
        end
        if n == 0 or sl_at(key, s, start, cap, 0) > v.upto then
          return
        end
        local f = n
        if newest > v.upto then
          f = sl_first(key, s, start, cap, 0, n - 1, v.upto)
        end
        sl_cut(key, v.upto, s, start, n, cap, newest, f)
      end,

      commit = function(key, p, now, v)
        v.remaining, v.reset, v.receipt = sl_write(key, now, p.window, p.max, p.cost, v.remaining, v.s, v.start, v.n, v.cap, v.newest, v.f, v.legacy)
      end,

      -- A call's admissions are the entries of its time, the receipt:
      -- the log is written back whole without them, for the rest of its
      -- life, and newest is what is left of it, as in the twin.
      refund = function(key, p, now)
        local s = redis.pcall('GET', key)
        if type(s) == 'table' then
          -- A ZSET of an older release, whose call of cost c took the
          -- members receipt to receipt+c-1.
          call('ZREMRANGEBYSCORE', key, string.format('%d', p.receipt), string.format('%d', p.receipt + p.cost - 1))
          return
        end
        if not s or #s < 20 then
          return
        end
        local start, n, cap, newest = struct.unpack('<I4I4I4i8', s)
        local r = p.receipt
        if n == 0 or sl_at(key, s, start, cap, n - 1) < r then
          return
        end
        -- lo and hi bound the entries of time r.
        local lo, hi = 0, n
        if sl_at(key, s, start, cap, 0) < r then
          lo = sl_first(key, s, start, cap, 0, n - 1, r - 1)
        end
        if sl_at(key, s, start, cap, lo) ~= r then
          return
        end
        if sl_at(key, s, start, cap, n - 1) > r then
          hi = sl_first(key, s, start, cap, lo, n - 1, r)
        end
        local k = n - (hi - lo)
        if k == 0 then
          call('DEL', key)
          return
        end
        if hi == n then
          newest = sl_at(key, s, start, cap, lo - 1)
        end
        call('SET', key, struct.pack('<I4I4I4i8', 0, k, k, newest) .. sl_bytes(s, start, cap, 0, lo) .. sl_bytes(s, start, cap, hi, n), 'KEEPTTL')
      end,
    }
  end
end
