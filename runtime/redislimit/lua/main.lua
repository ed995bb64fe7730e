-- Entry point of the limiter script. Go concatenates lua/*.lua (this file
-- last) into one script, so that one EVALSHA decides any mix of algorithms,
-- several limits of one call at once (all or nothing), and several calls
-- one after another. Each algorithm file registers, in `algos` under its
-- code, a function that builds its check, commit, refund and charge
-- functions, and optionally settle; their Go twins in runtime/memlimit must
-- decide identically. A limit of held calls (lua/concurrency.lua) also
-- builds release(key, p, now), which SETTLE calls in place of refund and
-- charge, whatever the units used, and which returns whether the call's
-- permit (p.receipt) was lost; and renew(keys, ps, now), which RENEW calls
-- with the call's limits of that algorithm.
--
-- An algorithm may also register, in `decide1s`, decide1(key, now, window,
-- max, burst, cost, alone): check and commit for a call of that one
-- enforced limit, returning allowed, remaining, retry, reset, receipt and,
-- for a denial that leaves settling to do, the verdict settle takes; it
-- must decide, record and settle exactly as check, commit and settle do.
-- With alone (a lone call, which nothing follows) it settles at once.
-- Such an algorithm defines algos[code] only when lone (header.lua) is
-- false.
--
-- check(key, p, now, v) only reads, and fills the verdict table v, which
-- may hold an earlier verdict (of any algorithm): it sets every field that
-- it or commit reads. commit records an admission, and its first write is a
-- command that Redis refuses when it is out of memory (maxmemory with
-- noeviction): Redis checks memory only at a script's first write, so any
-- write before it, even a deletion, would let every later one through.
-- refund(key, p, now) gives back p.cost units of the admission that
-- p.receipt identifies, as far as they still count; charge(key, p, now)
-- records p.cost more units at now, with or without room (SETTLE, below).
-- Neither decides anything. An algorithm whose commit records cost units
-- whatever check found (the token bucket's level may then go below 0)
-- leaves charge undefined: a check and a commit then charge.
-- settle(key, v) tidies up (deletes what stopped counting) when nothing is
-- recorded, from check's verdict v alone (the limit's table is reused by the
-- next call); in a batch, every settle runs after the last call, so that the batch's
-- first write is still a commit's. Once that first write passes, Redis lets
-- the rest of the batch write too: a batch may go past maxmemory by what
-- its calls record, never further.
--
-- The contract with Go (protocol.go, which encodes and decodes it). The
-- algorithms' codes, SHADOW_FLAG and the modes are Go's constants, whose
-- values stand in place of their names in the script Go assembles.
--
-- KEYS      the storage keys of every limit of every call, in order; for
--           SETTLE, then a settle marker
-- ARGV[1]   DECIDE ('a') to decide, CHECK ('c') to check without recording
--           anything, SETTLE ('s') to settle earlier admissions (one call),
--           UNIFORM ('u') to decide calls of one enforced limit each, the
--           same limit for all
-- ARGV[2]   the calls, as little-endian 64-bit integers: for each call
--           now (µs, or -1 for the server's clock) and its number of limits
--           n, plus OP_SHIFT for a call to check, 2*OP_SHIFT for one to
--           settle, 3*OP_SHIFT for one to renew, 4*OP_SHIFT for one that
--           waits, 5*OP_SHIFT for one to release, whatever ARGV[1] says (a
--           batch mixes them all), then for each limit: code, window µs,
--           max, burst, cost, for a calendar limit (CALENDAR_WINDOW) the
--           previous window's start and the next window's end (see
--           lua/calendar_window.lua), and for SETTLE, RENEW, WAIT and
--           RELEASE the receipt and the units used (for WAIT, see below). code is the
--           algorithm's code (its key in algos), plus SHADOW_FLAG for a
--           limit in shadow mode.
--           For UNIFORM: the limit's code, window µs, max, burst and cost, then
--           one now for every call, or one per call (one per key).
--
-- DECIDE and CHECK return one string of little-endian 64-bit integers: for each
-- call, committed (1 or 0), then per limit: allowed, remaining, retry µs,
-- reset µs, receipt. (A string is one reply for the client to read, where
-- an array is one reply per number.) UNIFORM returns, for each call,
-- remaining*2 + allowed, retry µs and reset µs: its calls are committed
-- exactly when allowed, and need no receipt. A call is admitted
-- (committed) only if every one of its enforced limits allows; a call with
-- none is always admitted. An admitted call is recorded under its enforced
-- limits and under its shadow limits that allow; a shadow limit without
-- room records nothing, and a denied call records nothing anywhere. So a
-- shadow limit never costs a second script call. Allowed still reports
-- each limit's room, shadow limits included. Calls are decided in order,
-- each seeing what the ones before it recorded. Limits in off mode are
-- never sent.
-- SETTLE settles admissions recorded earlier, identified by their receipts
-- (those DECIDE returned), at the units they used (the caller sends only
-- the limits that recorded the call, and used at most the limit's
-- capacity): a limit whose cost is above used refunds the difference, one
-- whose cost is below charges it, recorded even past max. A refund is a
-- settle at used 0 (limits on different cluster slots decided one slot
-- after another, a later slot denying). It returns committed 1 if it
-- applied, 0 if not, and 0 for each limit's numbers but the first, which
-- is 1 for a permit that was lost (see release). The key after its
-- limits' is a marker unique to the settle, in the same slot, and its first write is
-- the marker's SET NX, which Redis refuses when out of memory: a client
-- that resends the command after losing the reply finds the marker and
-- settles nothing, so a settle applies at most once.
-- RENEW renews the permits of an admitted call, identified by their
-- receipts, all of them or none (see renew): it returns committed 1 if
-- they were renewed, and for each limit 1 for a permit lost, then zeros.
-- Renewing twice is harmless, so it needs no marker.
-- WAIT decides as DECIDE does for a call that waits for room
-- (runtime.WaitHolder), whose every limit also carries minus its ticket
-- (its place in the line of calls waiting for that limit's permits, or 0
-- for none) and how long to keep the place, µs; a call that is not
-- admitted keeps its places, or takes them (see queue in
-- lua/concurrency.lua), and each such limit's receipt is minus the
-- place's ticket. With -1 in place of how long, the call gives its places
-- up and nothing is decided: it returns zeros.
-- RELEASE settles a call's limits that are all concurrency limits: it
-- releases each permit by its receipt, with no marker, and returns
-- committed 1 and, per limit, 1 for a permit lost, then zeros. An id is
-- never given twice for a key, so a release resent after a lost reply
-- removes nothing; it reports the permit lost, as it cannot tell its own
-- earlier release from a lease that ended.
--
-- Spread batches. On a Redis Cluster a script may declare the keys of one
-- slot only, but may touch undeclared keys of any slot its node serves. A
-- batch of calls on several slots of one node declares its first key alone
-- (by which the client routes it) and passes the others in ARGV[3..]. A
-- key the node does not serve (its slot moved, or is moving) fails at its
-- first access, before its call wrote anything: every check reads a call's
-- keys before its commit writes. The batch then stops there, and reports
-- how far it got: its reply begins with the number of calls decided (those
-- before the stop), then holds their results as above, then the error
-- that stopped it, as text. The calls after the stop are left to the
-- caller, which sends each with its keys declared.

local mode = ARGV[1]
local count = #ARGV[2] / 8

if lone then
  -- A lone call of one limit, the commonest script call: decided before
  -- the rest of this file defines anything, with no table.
  local code, window, max, burst, cost, now = struct.unpack('<i8i8i8i8i8i8', ARGV[2])
  local decide1 = decide1s[code]
  if decide1 then
    -- As clock, below, does.
    if now < 0 then
      local t = call('TIME')
      now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    else
      ttl_pad_ms = 1000
    end
    local ok, remaining, retry, reset = decide1(KEYS[1], now, window, max, burst, cost, true)
    return struct.pack('<i8i8i8', ok and remaining * 2 + 1 or remaining * 2, retry, reset)
  end
end

local server_now
-- clock returns a call's time: now, or the server's for -1; and sets
-- ttl_pad_ms for it.
local function clock(now)
  if now >= 0 then
    ttl_pad_ms = 1000
    return now
  end
  -- The server's clock, not the callers': app servers' clocks drift apart.
  if server_now == nil then
    local t = call('TIME')
    server_now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  ttl_pad_ms = 0
  return server_now
end

-- The numbers of ARGV[2], read with as few calls into C as its stack, which
-- holds a few thousand values, allows.
local nums
if mode == UNIFORM then
  -- Read below.
elseif count == 7 then
  -- One call of one limit, the commonest: a literal format costs nothing
  -- to build.
  nums = {struct.unpack('<i8i8i8i8i8i8i8', ARGV[2])}
elseif count <= 4000 then
  nums = {struct.unpack('<' .. string.rep('i8', count), ARGV[2])}
else
  nums = {}
  for at = 0, count - 1, 4000 do
    local m = math.min(4000, count - at)
    local chunk = {struct.unpack('<' .. string.rep('i8', m), ARGV[2], at * 8 + 1)}
    for j = 1, m do
      nums[at + j] = chunk[j]
    end
  end
end

-- A settle marker outlives any client retry of its command by far; it is
-- written only when settling, never on the decision path.
local settle_marker_ms = 60000

-- ops returns the functions of the algorithm code (nil for an unknown
-- code), built on their first use in this run.
local built
local function ops(code)
  local o = built and built[code]
  if not o and algos[code] then
    o = algos[code]()
    built = built or {}
    built[code] = o
  end
  return o
end

local out = {}
local settles
-- ran counts the calls decided.
local ran = 0
-- keys are the storage keys, in order: a spread batch's are KEYS[1] and
-- ARGV[3..].
local keys = KEYS
if ARGV[3] then
  keys = {KEYS[1], unpack(ARGV, 3)}
end

-- decide_calls decides (or checks, or settles) the calls, filling out and
-- settles; it returns what the script must return at once, if anything.
local function decide_calls()
  -- The chunk's values it reads most, as locals: an upvalue costs more.
  local out, nums, keys, mode, count, pos, k = out, nums, keys, mode, count, 1, 0

  if mode == UNIFORM then
    -- The limit, and the first call's now (or every call's).
    local code, window, max, burst, cost, now = struct.unpack('<i8i8i8i8i8i8', ARGV[2])
    local decide1 = decide1s[code]
    if not decide1 then
      local a = ops(code)
      if a == nil then
        return redis.error_reply('ERR ratelimit: unknown algorithm ' .. tostring(code))
      end
      -- check and commit, with tables.
      local p = {window = window, max = max, burst = burst, cost = cost, receipt = 0, shadow = false}
      decide1 = function(key, now)
        local v = {ok = false, remaining = 0, retry = 0, reset = 0, receipt = 0}
        a.check(key, p, now, v)
        if v.ok then
          a.commit(key, p, now, v)
        elseif a.settle ~= nil then
          return false, v.remaining, v.retry, v.reset, 0, v
        end
        return v.ok, v.remaining, v.retry, v.reset, 0
      end
    end
    -- One now per call unless they share one.
    local nows = count > 6 and {struct.unpack('<' .. string.rep('i8', count - 5), ARGV[2], 41)}
    local shared = not nows and clock(now)
    local o = 0
    for i = 1, #keys do
      local ok, remaining, retry, reset, _, kept = decide1(keys[i], shared or clock(nows[i]), window, max, burst, cost)
      if kept then
        settles = settles or {}
        settles[#settles + 1] = {ops(code).settle, keys[i], kept}
      end
      out[o + 1], out[o + 2], out[o + 3] = ok and remaining * 2 + 1 or remaining * 2, retry, reset
      o = o + 3
      ran = i
    end
    ran = #keys
    return
  end

  local ps, impl, verdicts, used = {}, {}, {}, nil
  while pos <= count do
    local now, n = clock(nums[pos]), nums[pos + 1]
    pos = pos + 2
    -- A call's own mode, when its count of limits carries one (OP_SHIFT
    -- times 1 for CHECK, 2 for SETTLE), else the script's.
    local cmode = mode
    if n >= OP_SHIFT then
      local op = n - n % OP_SHIFT
      n = n - op
      if op == OP_SHIFT then
        cmode = CHECK
      elseif op == 2 * OP_SHIFT then
        cmode = SETTLE
      elseif op == 3 * OP_SHIFT then
        cmode = RENEW
      elseif op == 4 * OP_SHIFT then
        cmode = WAIT
      else
        cmode = RELEASE
      end
    end

    -- (A shadow limit's code is no key of decide1s.)
    local one = cmode == DECIDE and n == 1 and decide1s[nums[pos]]
    if one then
      -- A call of one enforced limit, the commonest: its algorithm's decide1
      -- checks and commits it with no table, where the general path below
      -- fills a limit's and a verdict's.
      k = k + 1
      local ok, remaining, retry, reset, receipt, kept = one(keys[k], now, nums[pos + 1], nums[pos + 2], nums[pos + 3], nums[pos + 4])
      if kept then
        -- A denial with tidying to do, which waits for the batch's end as
        -- the general path's settles do.
        settles = settles or {}
        settles[#settles + 1] = {ops(nums[pos]).settle, keys[k], kept}
      end
      pos = pos + 5
      local o = #out
      local allowed = ok and 1 or 0
      out[o + 1], out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6] = allowed, allowed, remaining, retry, reset, receipt
      ran = ran + 1
    elseif cmode == RELEASE then
      -- Permits released by id (lua/concurrency.lua's conc_release), with
      -- no table and no marker.
      local o = #out
      out[o + 1] = 1
      for i = 1, n do
        local lost = conc_release(keys[k + i], nums[pos + 5], now)
        out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6] = lost and 1 or 0, 0, 0, 0, 0
        o = o + 5
        pos = pos + 7
      end
      k = k + n
      ran = ran + 1
    else
      for i = 1, n do
        local code, window, max, burst, cost = nums[pos], nums[pos + 1], nums[pos + 2], nums[pos + 3], nums[pos + 4]
        pos = pos + 5
        local shadow = code >= SHADOW_FLAG
        if shadow then
          code = code - SHADOW_FLAG
        end
        local prev, nxt = 0, 0
        if code == CALENDAR_WINDOW then
          -- A calendar's boundaries before and after the current window's
          -- (window and burst; lua/calendar_window.lua).
          prev, nxt = nums[pos], nums[pos + 1]
          pos = pos + 2
        end
        impl[i] = ops(code)
        if impl[i] == nil then
          return redis.error_reply('ERR ratelimit: unknown algorithm ' .. tostring(code))
        end
        local p = ps[i]
        if p == nil then
          -- Sized for its fields: a table that grows is rebuilt each time.
          p = {window = 0, max = 0, burst = 0, cost = 0, receipt = 0, shadow = false, ticket = 0, wait = 0, prev = 0, next = 0}
          ps[i] = p
        end
        p.window, p.max, p.burst, p.cost, p.receipt, p.shadow, p.ticket, p.wait = window, max, burst, cost, 0, shadow, 0, 0
        p.prev, p.next = prev, nxt
        if cmode == SETTLE or cmode == RENEW then
          used = used or {}
          p.receipt, used[i] = nums[pos], nums[pos + 1]
          pos = pos + 2
        elseif cmode == WAIT then
          -- A waiting call's place (minus its ticket, or 0) and how long
          -- to keep it (-1 to give it up).
          p.ticket, p.wait = -nums[pos], nums[pos + 1]
          pos = pos + 2
        end
      end

      if cmode == SETTLE then
        -- The marker follows the call's keys.
        local applied = call('SET', keys[k + n + 1], '1', 'NX', 'PX', settle_marker_ms)
        local lost = {}
        if applied then
          for i = 1, n do
            local p = ps[i]
            local d = used[i] - p.cost
            if impl[i].release then
              -- A permit is released whatever the units used.
              lost[i] = impl[i].release(keys[k + i], p, now)
            elseif d < 0 then
              p.cost = -d
              impl[i].refund(keys[k + i], p, now)
            elseif d > 0 then
              p.cost = d
              if impl[i].charge then
                impl[i].charge(keys[k + i], p, now)
              else
                local v = {ok = false, remaining = 0, retry = 0, reset = 0, receipt = 0}
                impl[i].check(keys[k + i], p, now, v)
                impl[i].commit(keys[k + i], p, now, v)
              end
            end
          end
        end
        local o = #out
        out[o + 1] = applied and 1 or 0
        for j = o + 2, o + 1 + 5 * n do
          out[j] = 0
        end
        for i = 1, n do
          if lost[i] then
            out[o + 2 + 5 * (i - 1)] = 1
          end
        end
        k = k + n + 1
        ran = ran + 1
      elseif cmode == WAIT and ps[1].wait < 0 then
        -- A waiting call that gives up: its places go, nothing is decided.
        for i = 1, n do
          if impl[i].leave then
            impl[i].leave(keys[k + i], ps[i])
          end
        end
        local o = #out
        for j = o + 1, o + 1 + 5 * n do
          out[j] = 0
        end
        k = k + n
        ran = ran + 1
      elseif cmode == RENEW then
        -- The call's permits, all renewed or none; its other limits are
        -- left alone.
        local ks, rps, at, renew = {}, {}, {}, nil
        for i = 1, n do
          if impl[i].renew then
            renew = impl[i].renew
            ks[#ks + 1], rps[#rps + 1], at[#at + 1] = keys[k + i], ps[i], i
          end
        end
        local all, lost = true, {}
        if renew then
          local l
          l, all = renew(ks, rps, now)
          for j, i in ipairs(at) do
            lost[i] = l[j]
          end
        end
        local o = #out
        out[o + 1] = all and 1 or 0
        for i = 1, n do
          out[o + 2], out[o + 3], out[o + 4], out[o + 5], out[o + 6] = lost[i] and 1 or 0, 0, 0, 0, 0
          o = o + 5
        end
        k = k + n
        ran = ran + 1
      else
        local all = true
        for i = 1, n do
          if verdicts[i] == nil or verdicts[i].kept then
            -- Room for the fields every verdict has and three of the
            -- algorithm's own.
            verdicts[i] = {ok = false, remaining = 0, retry = 0, reset = 0, receipt = 0}
          end
          impl[i].check(keys[k + i], ps[i], now, verdicts[i])
          if not verdicts[i].ok and not ps[i].shadow then
            all = false
          end
        end
        local deciding = cmode == DECIDE or cmode == WAIT
        local committed = all and deciding
        for i = 1, n do
          if committed and verdicts[i].ok then
            -- Every enforced verdict is ok here, so this is each enforced limit
            -- and each shadow limit with room.
            impl[i].commit(keys[k + i], ps[i], now, verdicts[i])
          elseif deciding and impl[i].settle ~= nil then
            -- A check writes nothing, not even the tidying a denial does:
            -- its twin, a peek, leaves a sliding log as it found it.
            settles = settles or {}
            settles[#settles + 1] = {impl[i].settle, keys[k + i], verdicts[i]}
            verdicts[i].kept = true
          end
        end

        if cmode == WAIT and not committed then
          -- A waiting call keeps its places, or takes them, and learns
          -- their tickets (as minus the receipt).
          for i = 1, n do
            if impl[i].queue then
              verdicts[i].receipt = -impl[i].queue(keys[k + i], ps[i], now, verdicts[i])
            end
          end
        end
        local o = #out
        out[o + 1] = committed and 1 or 0
        for i = 1, n do
          local v = verdicts[i]
          out[o + 2] = v.ok and 1 or 0
          out[o + 3] = v.remaining
          out[o + 4] = v.retry
          out[o + 5] = v.reset
          out[o + 6] = v.receipt or 0
          o = o + 5
        end
        k = k + n
        ran = ran + 1
      end
    end
  end
end

-- stop is the error that stopped a spread batch.
local stop
if keys == KEYS then
  local early = decide_calls()
  if early then
    return early
  end
else
  local ok, early = pcall(decide_calls)
  if not ok then
    stop = type(early) == 'table' and early.err or tostring(early)
  elseif early then
    return early
  end
end
if settles then
  for _, s in ipairs(settles) do
    s[1](s[2], s[3])
  end
end
-- unpack passes its numbers on Lua's C stack, which holds a few thousand.
local reply
if #out == 6 then
  reply = struct.pack('<i8i8i8i8i8i8', unpack(out))
elseif #out <= 1000 then
  reply = struct.pack('<' .. string.rep('i8', #out), unpack(out))
else
  local parts = {}
  for i = 1, #out, 1000 do
    local j = math.min(i + 999, #out)
    parts[#parts + 1] = struct.pack('<' .. string.rep('i8', j - i + 1), unpack(out, i, j))
  end
  reply = table.concat(parts)
end
if keys ~= KEYS then
  return struct.pack('<i8', ran) .. reply .. (stop or '')
end
return reply
