-- sliding-log: exact. Each key's log is one string of the admissions in
-- µs, oldest first, every unit of a call at the call's time, 7 bytes each.
-- Go twin: runtime/memlimit/slidinglog.go. Two layouts, chosen by what
-- the log holds, whatever its max:
--
--   small   up to SL_SMALL (128) entries: a mark (21 bytes, Go's
--           smallLogMark, written in for SL_MARK), then the n entries
--           ('<i7', a signed 56-bit µs time, good for a thousand years
--           after the Unix epoch), so 7(n+3) bytes.
--   ring    more: a 20-byte header, struct '<I4I4I4i8' start, n,
--           cap, newest, then cap slots ('<i7'): entry i (0 oldest, n-1
--           newest) in slot (start+i) % cap, so 20 + 7cap bytes. Seven
--           bytes rather than eight keep a full log of Max 1,000 in
--           jemalloc's 7 KiB class.
--
-- The mark reads as a ring's header of start 2^32-1, n 1, cap 1: a start no
-- ring has (its fourth byte is 255, a ring's 0), so the bytes 0 to
-- SL_PREFIX_LAST, 7(SL_SMALL+3) of them, hold a whole small log or a
-- ring's header. Up to max
-- SL_SMALL a log is read whole with GET; above, those bytes are read with
-- GETRANGE. Every write that leaves at most SL_SMALL entries writes a small
-- log, and one that leaves more a ring.
--
-- Times never decrease along a log, and each call's is later than every
-- entry before it, so a call's time is its receipt: its admissions are the
-- entries of that time.
--
-- The window is (now-window, now]: an admission at s stops counting at
-- s+window, and the entries still counting are the last count of the log.
-- A call of cost c has room exactly when count+c <= max; when it has none,
-- room comes when entry n+c-max-1 stops counting. Only the number of
-- entries still counting, for remaining, needs a search: the oldest four
-- read at once, or a binary search.
--
-- A small log lives until the end of its
-- newest entry's quarter of the window plus a window (sl_life). An
-- admission in that quarter appends its entries with SETRANGE at the end,
-- keeping up to three entries that stopped counting in front while one
-- still counts and n+c <= max: its lifetime stands, so a decision is TIME,
-- GET and SETRANGE, GCRA's commands, copying a few bytes rather than the
-- whole log. Any other admission writes the log whole with SET PX,
-- without the entries that stopped counting. Entries kept count again if
-- the clock steps back before they are dropped; the twin keeps the same
-- ones.
--
-- A ring is read with GETRANGE (its header, its oldest 32 entries, those a
-- binary search reads when all 32 stopped counting, the one a denial waits
-- for) and written in place with SETRANGE (the entries, once or twice when
-- they wrap, then the header) and PEXPIRE, so that its Redis time and what
-- a replica receives do not grow with max; it grows its cap by doubling,
-- up to max, in a string made at its exact length. A call of cost c writes
-- c entries of one packed time, 4,096 at a time (see sl_fill). A ring made
-- from a small log gets 2*SL_SMALL slots (up to max), so that a log
-- hovering about SL_SMALL entries does not grow at each admission.
--
-- Every denial (and check) drops the entries that stopped counting, as the
-- in-memory twin does, after the batch, so that the first write of a
-- script call is still a commit's (see main.lua), with a SET KEEPTTL of
-- what still counts, or a SETRANGE of a ring's header. A denial with
-- nothing to drop writes nothing.

-- sl_more returns the functions for every log and every call, built on
-- first use: decide1 below decides the commonest calls itself, and each
-- function a run defines costs it an allocation and its collection.
local sl_lib
local function sl_more()
  if sl_lib then
    return sl_lib
  end
  -- sl_quarter returns the length of a small log's quarter windows, in
  -- µs: floor(window/4), at least 1, counted from the epoch.
  local function sl_quarter(window)
    local g = window - window % 4
    return g > 0 and g / 4 or 1
  end

  -- sl_life returns the lifetime in ms that a small log gets when it is
  -- written with newest entry t at now: until the end of t's quarter of a
  -- window, plus a window. An entry appended in the quarter of the newest
  -- entry before it then leaves the lifetime as it is.
  local function sl_life(t, now, window)
    local g = sl_quarter(window)
    local px = t - t % g + g + window - now + 999
    return (px - px % 1000) / 1000 + ttl_pad_ms
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

  -- sl_ring returns the small log s as a ring string (start 0, cap n), its
  -- n and its newest entry.
  local function sl_ring(s)
    local n = #s / 7 - 3
    local newest = n > 0 and struct.unpack('<i7', s, #s - 6) or 0
    return struct.pack('<I4I4I4i8', 0, n, n, newest) .. string.sub(s, 22), n, newest
  end

  -- sl_small returns entries i to j-1 of the ring in s as a small log.
  local function sl_small(s, start, cap, i, j)
    return SL_MARK .. sl_bytes(s, start, cap, i, j)
  end

  -- sl_load reads the log at key, unless decide1 read it already: pre,
  -- false for no log. It returns s (the whole string as a ring, or false
  -- when only its first bytes were read), its header, and whether it is a
  -- small log.
  local function sl_load(key, max, pre)
    local s = pre
    if s == nil then
      if max <= SL_SMALL then
        s = call('GET', key)
      else
        s = call('GETRANGE', key, '0', SL_PREFIX_LAST)
      end
    end
    if s and #s > 0 and string.byte(s, 4) == 255 then
      local n, newest
      s, n, newest = sl_ring(s)
      return s, 0, n, n, newest, true
    end
    if not s or #s < 20 then
      return false, 0, 0, 0, 0
    end
    local start, n, cap, newest = struct.unpack('<I4I4I4i8', s)
    if #s < 20 + 7 * cap then
      s = false
    end
    return s, start, n, cap, newest
  end

  -- sl_range reads entries i to j-1 of the ring at key, as stored.
  local function sl_range(key, start, cap, i, j)
    if i >= j then
      return ''
    end
    local a, b = start + i, start + j
    if a >= cap then
      a, b = a - cap, b - cap
    end
    if b <= cap then
      return call('GETRANGE', key, string.format('%d', 20 + 7 * a), string.format('%d', 19 + 7 * b))
    end
    return call('GETRANGE', key, string.format('%d', 20 + 7 * a), string.format('%d', 19 + 7 * cap)) ..
      call('GETRANGE', key, '20', string.format('%d', 19 + 7 * (b - cap)))
  end

  -- sl_read decides a call of cost at now. It returns whether it has room,
  -- the remaining calls before it (clamped at 0 when it has none), the µs
  -- until room when it has none and until the log empties, then the log as
  -- sl_load read it, the first entry still counting, f, and whether the log
  -- is small, for sl_write and sl_cut. pre is as sl_load takes it.
  local function sl_read(key, now, window, max, cost, pre)
    local upto = now - window
    local s, start, n, cap, newest, small = sl_load(key, max, pre)
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
      return true, remaining, 0, reset, s, start, n, cap, newest, f, small
    end
    if remaining < 0 then
      remaining = 0
    end
    return false, remaining, sl_at(key, s, start, cap, n + cost - max - 1) + window - now, reset, s, start, n, cap, newest, f, small
  end

  -- sl_cut drops from the log, as sl_load read it, its first f entries,
  -- which stopped counting, as a decision that records nothing does:
  -- entries that stopped counting are gone even if the clock steps back, as
  -- they are from the in-memory twin.
  local function sl_cut(key, s, start, n, cap, newest, f, small)
    if f == n then
      call('DEL', key)
    elseif small then
      call('SET', key, sl_small(s, start, cap, f, n), 'KEEPTTL')
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
  local function sl_write(key, now, window, max, cost, remaining, s, start, n, cap, newest, f)
    local t = now
    if newest >= t then
      t = newest + 1
    end
    local reset = t + window - now
    local count = n - f
    if count + cost <= SL_SMALL then
      -- A small log, whole, keeping the entries that stopped counting
      -- as decide1 does; a ring's are read from it.
      local g = sl_quarter(window)
      if f < n and f <= 3 and n + cost <= max and n + cost <= SL_SMALL and newest - newest % g == t - t % g then
        f = 0
      end
      local kept
      if s then
        kept = sl_bytes(s, start, cap, f, n)
      else
        kept = sl_range(key, start, cap, f, n)
      end
      call('SET', key, SL_MARK .. kept .. string.rep(struct.pack('<i7', t), cost),
        'PX', string.format('%d', sl_life(t, now, window)))
      return remaining - cost, reset, t
    end
    -- floordiv, written out as in gcra.lua.
    local px = reset + 999
    px = (px - px % 1000) / 1000 + ttl_pad_ms
    local e = struct.pack('<i7', t)
    if s or count == 0 and (cost <= 4096 or cap > 0 and cap < cost) then
      -- Whole: the entries still counting, then this call's, in 2*SL_SMALL
      -- slots at least.
      local k = count + cost
      local slots = 2 * SL_SMALL
      if slots > max then
        slots = max
      end
      if slots < k then
        slots = k
      end
      local pad = ''
      if slots > k then
        pad = string.rep('\0', 7 * (slots - k))
      end
      call('SET', key, sl_rep(e, cost, struct.pack('<I4I4I4i8', 0, k, slots, t) .. (count > 0 and sl_bytes(s, start, cap, f, n) or ''), pad),
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
  local function sl_decide1(key, now, window, max, burst, cost, alone, pre)
    local ok, remaining, retry, reset, s, start, n, cap, newest, f, small = sl_read(key, now, window, max, cost, pre)
    if not ok then
      local keep
      if f > 0 then
        if alone then
          sl_cut(key, s, start, n, cap, newest, f, small)
        else
          keep = {upto = now - window, lmax = max}
        end
      end
      return false, remaining, retry, reset, 0, keep
    end
    local receipt
    remaining, reset, receipt = sl_write(key, now, window, max, cost, remaining, s, start, n, cap, newest, f)
    return true, remaining, 0, reset, receipt
  end

  sl_lib = {at = sl_at, first = sl_first, load = sl_load, read = sl_read, write = sl_write, cut = sl_cut,
    bytes = sl_bytes, ring = sl_ring, small = sl_small, decide1 = sl_decide1}
  return sl_lib
end

-- decide1 decides itself a call on a small log, or on no log, that leaves
-- a small log, with no Lua function call; any other goes to sl_more's,
-- with what it read. In a batch the calls share their time, so the packed
-- entry and the lifetime are made again only when they change.
local sl_t, sl_e, sl_fresh, sl_px_x, sl_px_s, sl_len, sl_len_s
local sl_unpack = struct.unpack
decide1s[SLIDING_LOG] = function(key, now, window, max, burst, cost, alone)
  local s
  if max <= SL_SMALL then
    s = call('GET', key)
  else
    s = call('GETRANGE', key, '0', SL_PREFIX_LAST)
    if s == '' then
      s = false
    elseif string.byte(s, 4) ~= 255 then
      -- A ring's first bytes.
      return sl_more().decide1(key, now, window, max, burst, cost, alone, s)
    end
  end
  if s == false or #s % 7 == 0 then
    -- Entry i is at byte 22+7i.
    local n = s and #s / 7 - 3 or 0
    local upto = now - window
    local f, newest = 0, 0
    if n > 0 then
      local e0, e1, e2, e3
      if n >= 4 then
        e0, e1, e2, e3 = sl_unpack('<i7i7i7i7', s, 22)
        newest = n == 4 and e3 or sl_unpack('<i7', s, #s - 6)
      elseif n == 3 then
        e0, e1, e2 = sl_unpack('<i7i7i7', s, 22)
        newest = e2
      elseif n == 2 then
        e0, e1 = sl_unpack('<i7i7', s, 22)
        newest = e1
      else
        e0 = sl_unpack('<i7', s, 22)
        newest = e0
      end
      if e0 > upto then
        f = 0
      elseif newest <= upto then
        f = n
      elseif e1 > upto then
        f = 1
      elseif e2 > upto then
        f = 2
      elseif e3 > upto then
        f = 3
      else
        -- sl_first: entry lo stopped counting, entry hi did not.
        local lo, hi = 3, n - 1
        while hi - lo > 1 do
          local mid = lo + hi
          mid = (mid - mid % 2) / 2
          if sl_unpack('<i7', s, 22 + 7 * mid) > upto then
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
          call('SET', key, SL_MARK .. string.sub(s, 22 + 7 * f), 'KEEPTTL')
        else
          keep = {upto = upto, lmax = max}
        end
      end
      return false, remaining, sl_unpack('<i7', s, 22 + 7 * (n + cost - max - 1)) + window - now, newest + window - now, 0, keep
    end
    if count + cost > SL_SMALL then
      -- Too many for a small log: a ring.
      return sl_more().decide1(key, now, window, max, burst, cost, alone, s)
    end
    local t = now
    if n > 0 and newest >= t then
      t = newest + 1
    end
    if t ~= sl_t then
      sl_t, sl_e, sl_fresh = t, struct.pack('<i7', t), nil
    end
    local e = sl_e
    if cost > 1 then
      e = string.rep(e, cost)
    end
    -- sl_quarter and sl_life, written out.
    local g = window - window % 4
    g = g > 0 and g / 4 or 1
    local q = t - t % g
    local px = q + g + window - now + 999
    if px ~= sl_px_x then
      sl_px_x = px
      sl_px_s = string.format('%d', (px - px % 1000) / 1000 + ttl_pad_ms)
    end
    if f < n and f <= 3 and n + cost <= max and n + cost <= SL_SMALL and newest - newest % g == q then
      -- Appended with SETRANGE at the end (APPEND would need a command
      -- beyond what the documented ACL grants), the entries that stopped
      -- counting kept.
      if #s ~= sl_len then
        sl_len, sl_len_s = #s, string.format('%d', #s)
      end
      call('SETRANGE', key, sl_len_s, e)
    elseif f == 0 and n > 0 then
      call('SET', key, s .. e, 'PX', sl_px_s)
    elseif count > 0 then
      call('SET', key, SL_MARK .. string.sub(s, 22 + 7 * f) .. e, 'PX', sl_px_s)
    elseif cost == 1 then
      -- A new log, as most in a batch of fresh keys are.
      sl_fresh = sl_fresh or SL_MARK .. e
      call('SET', key, sl_fresh, 'PX', sl_px_s)
    else
      call('SET', key, SL_MARK .. e, 'PX', sl_px_s)
    end
    return true, max - count - cost, 0, t + window - now, t
  end
  return sl_more().decide1(key, now, window, max, burst, cost, alone, s)
end

-- A lone call never reaches these (see lone in header.lua).
if not lone then
  algos[SLIDING_LOG] = function()
    local sl_at, sl_first, sl_load, sl_read, sl_write, sl_cut, sl_bytes = sl_more().at, sl_lib.first, sl_lib.load, sl_lib.read, sl_lib.write, sl_lib.cut, sl_lib.bytes
    return {
      check = function(key, p, now, v)
        v.ok, v.remaining, v.retry, v.reset, v.s, v.start, v.n, v.cap, v.newest, v.f = sl_read(key, now, p.window, p.max, p.cost)
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
        local s, start, n, cap, newest, small = sl_load(key, v.lmax)
        if n == 0 or sl_at(key, s, start, cap, 0) > v.upto then
          return
        end
        local f = n
        if newest > v.upto then
          f = sl_first(key, s, start, cap, 0, n - 1, v.upto)
        end
        sl_cut(key, s, start, n, cap, newest, f, small)
      end,

      commit = function(key, p, now, v)
        v.remaining, v.reset, v.receipt = sl_write(key, now, p.window, p.max, p.cost, v.remaining, v.s, v.start, v.n, v.cap, v.newest, v.f)
      end,

      -- A call's admissions are the entries of its time, the receipt:
      -- up to p.cost of them, if they still count, are taken out, and the
      -- log is written back whole without them, for the rest of its life
      -- (small when at most SL_SMALL entries are left), and newest is
      -- what is left of it, as in the twin.
      refund = function(key, p, now)
        if p.receipt <= now - p.window then
          return
        end
        local s = call('GET', key)
        local small = s and #s % 7 == 0
        if small then
          s = sl_lib.ring(s)
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
        -- Entries lo to hi-1 are of time r: the first p.cost go.
        local cut = hi
        if hi - lo > p.cost then
          cut = lo + p.cost
        end
        local k = n - (cut - lo)
        if k == 0 then
          call('DEL', key)
          return
        end
        if cut == n then
          newest = sl_at(key, s, start, cap, lo - 1)
        end
        if k <= SL_SMALL then
          call('SET', key, sl_lib.small(s, start, cap, 0, lo) .. sl_bytes(s, start, cap, cut, n), 'KEEPTTL')
          return
        end
        call('SET', key, struct.pack('<I4I4I4i8', 0, k, k, newest) .. sl_bytes(s, start, cap, 0, lo) .. sl_bytes(s, start, cap, cut, n), 'KEEPTTL')
      end,

      -- p.cost entries at now (after the newest), written as a commit of
      -- that cost would write them, room or none; the entries that
      -- stopped counting are dropped as it drops them.
      charge = function(key, p, now)
        local _, remaining, _, _, s, start, n, cap, newest, f = sl_read(key, now, p.window, p.max, p.cost)
        sl_write(key, now, p.window, p.max, p.cost, remaining, s, start, n, cap, newest, f)
      end,
    }
  end
end
