-- concurrency: a ZSET per key whose members are the permits held, each
-- named by its id (a decimal integer) and scored by its expiry in µs; and
-- one member 'n', scored by minus the last id given, the key's counter. A
-- permit whose expiry is at or before now counts no more; every operation
-- reads only the permits scored after now, and the writes drop the others
-- (ZREMRANGEBYSCORE 0 now, which leaves the counter's negative score
-- alone). The fallback (runtime/memlimit) holds its permits in process,
-- apart from these.
--
-- A permit is taken by commit (DECIDE), or by conc_decide1 for a call of
-- this one limit, released by release (SETTLE of a call with other limits
-- on the slot, whatever the units used), or by conc_release in main.lua's
-- RELEASE, and extended by renew (RENEW). The receipt is the
-- permit's id, which release and renew name: a stale caller's release
-- removes its own permit or nothing, never another's.
--
-- Ids are never given twice for a key: each is max(counter + 1, Redis's
-- TIME in µs). While the key lives, the counter makes them grow. Once the
-- key is gone (expired, evicted or reset) and made again, ids start at
-- TIME, which has passed every id given before: an id runs ahead of TIME
-- only by the ids given within one script run (each costs Redis more than
-- a µs of work, and a script's TIME is read at its start), and the key
-- outlives its last permit by CONC_PAD_MS more. Only Redis's clock stepping
-- back by more than that could give an id twice. Ids are taken on Redis's
-- clock even when callers pass their own (WithClock), which may disagree.
--
-- As main.lua requires, check only reads, and commit's first write is its
-- ZADD, which Redis refuses when out of memory; the dropping of expired
-- permits follows it, or runs in settle after a denial.

-- CONC_PAD_MS is how long a key outlives the expiry of its last permit.
local CONC_PAD_MS = 1000

-- Waiters (runtime.WaitHolder). A call waiting for a permit holds a place
-- in the key's queue: a member 'w<until>:<ticket>' of the same ZSET,
-- scored WAIT_BASE + ticket, above every permit's expiry (2^52 µs is the
-- year 2112) and exact as a double (below 2^53). A ticket is an id from the
-- key's counter, so places are in order of arrival. A place lives until
-- <until> (µs), which each ask of its waiter (WAIT in main.lua) moves on,
-- by at most WAIT_LIFE_MAX µs; a waiter that vanished without leaving
-- (killed, or paused past it) counts no more after it, and the writes drop
-- it when they meet it. A call may take a permit only if the permits held
-- and the live places ahead of it leave one: a waiter counts the places of
-- smaller tickets, any other call every place. So a permit freed while
-- calls wait goes to the first of them.
local WAIT_BASE = 4503599627370496
local WAIT_BASE_S = '4503599627370496'
local WAIT_LIFE_MAX = 10000000

-- conc_waiting reads a key whose top member is a place (calls wait): it
-- returns the permits held at now, the latest expiry of one (now if none),
-- the live places ahead of ticket (all for 0), counted up to what max
-- leaves free, and the places found dead (or nil). It reads by rank, with
-- the commands the rest of the script uses (the ACL in docs/redis.md).
local function conc_waiting(key, now, nows, ticket, max)
  -- Members below the first place: the counter and every permit.
  local first = call('ZCOUNT', key, '-inf', '(' .. WAIT_BASE_S)
  local held = call('ZCOUNT', key, '(' .. nows, '(' .. WAIT_BASE_S)
  local last = now
  if held > 0 then
    last = tonumber(call('ZRANGE', key, first - 1, first - 1, 'WITHSCORES')[2])
  end
  local upper = math.huge
  if ticket > 0 then
    upper = WAIT_BASE + ticket
  end
  local ahead, dead, at = 0, nil, first
  while ahead < max - held do
    local ws = call('ZRANGE', key, at, at + max - held - ahead - 1, 'WITHSCORES')
    if #ws == 0 then
      break
    end
    for j = 1, #ws, 2 do
      if tonumber(ws[j + 1]) >= upper then
        return held, last, ahead, dead
      end
      if tonumber(string.match(ws[j], '^w(%d+)')) > now then
        ahead = ahead + 1
      else
        dead = dead or {}
        dead[#dead + 1] = ws[j]
      end
    end
    at = at + #ws / 2
  end
  return held, last, ahead, dead
end

-- conc_expire sets key's lifetime to outlast the expiry last, and, while
-- calls wait (waiting), the longest a place can live.
local function conc_expire(key, now, last, waiting)
  if waiting and last < now + WAIT_LIFE_MAX then
    last = now + WAIT_LIFE_MAX
  end
  call('PEXPIRE', key, string.format('%d', floordiv(last - now + 999, 1000) + ttl_pad_ms + CONC_PAD_MS))
end

-- conc_drop removes the dead places of the list dead, if any.
local function conc_drop(key, dead)
  if dead then
    call('ZREM', key, unpack(dead))
  end
end

-- conc_tnow is Redis's TIME in µs, read once per script run, for ids.
local conc_tnow

-- conc_decide1, the concurrency limit's decide1 (see main.lua): check and
-- commit for a call of this one enforced limit, with no table but a
-- denial's verdict for settle. It decides, records and settles exactly as
-- check, commit and settle below do, in the same commands.
local function conc_decide1(key, now, window, max, burst, cost, alone)
  local nows = string.format('%d', now)
  -- The permits held, and the places of calls waiting, if any.
  local held = call('ZCOUNT', key, '(' .. nows, '+inf')
  local last, ahead, dead, waiting = now, 0, nil, false
  if held > 0 then
    local top = call('ZRANGE', key, -1, -1, 'WITHSCORES')
    last = tonumber(top[2])
    if last >= WAIT_BASE then
      waiting = true
      held, last, ahead, dead = conc_waiting(key, now, nows, 0, max)
    end
  end
  local remaining = max - held - ahead
  if remaining < 0 then
    remaining = 0
  end
  if held + ahead + cost > max then
    if alone then
      call('ZREMRANGEBYSCORE', key, 0, nows)
      conc_drop(key, dead)
      return false, remaining, 0, last - now, 0
    end
    return false, remaining, 0, last - now, 0, {now = now, dead = dead}
  end
  if conc_tnow == nil then
    local t = call('TIME')
    conc_tnow = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local id = conc_tnow
  local c = tonumber(call('ZSCORE', key, 'n'))
  if c ~= nil and -c >= id then
    id = 1 - c
  end
  local expiry = now + window
  call('ZADD', key, string.format('%d', expiry), string.format('%d', id), string.format('%d', -id), 'n')
  call('ZREMRANGEBYSCORE', key, 0, nows)
  conc_drop(key, dead)
  if expiry > last then
    last = expiry
  end
  conc_expire(key, now, last, waiting)
  return true, remaining - cost, 0, last - now, id
end
decide1s[CONCURRENCY] = conc_decide1

-- conc_place returns the member of the place of ticket in key, or nil.
local function conc_place(key, ticket)
  local sc = string.format('%d', WAIT_BASE + ticket)
  local at = call('ZCOUNT', key, '-inf', '(' .. sc)
  local m = call('ZRANGE', key, at, at, 'WITHSCORES')
  if m[1] and tonumber(m[2]) == WAIT_BASE + ticket then
    return m[1]
  end
  return nil
end

-- conc_release removes the permit receipt of key, and reports whether it
-- was lost: gone, or expired at now (and then removed all the same). It is
-- release, below, and main.lua's RELEASE, which builds no table.
local function conc_release(key, receipt, now)
  local ids = string.format('%d', receipt)
  local s = tonumber(call('ZSCORE', key, ids))
  if s == nil then
    return true
  end
  call('ZREM', key, ids)
  return s <= now
end

-- A lone call never reaches these (see lone in header.lua).
if not lone then
  algos[CONCURRENCY] = function()
    -- Redis's TIME, read once per script run, for ids.
    local function redis_time()
      if conc_tnow == nil then
        local t = call('TIME')
        conc_tnow = tonumber(t[1]) * 1000000 + tonumber(t[2])
      end
      return conc_tnow
    end

    -- live returns the expiry of key's permit id, or nil when it is gone or
    -- expired at now.
    local function live(key, id, now)
      local s = tonumber(call('ZSCORE', key, id))
      if s == nil or s <= now then
        return nil
      end
      return s
    end

    return {
      -- Permits live at now, and the places of calls waiting ahead of
      -- this one: their number against max (cost is 1), and the latest
      -- expiry of a permit, which is ResetAfter. RetryAfter is 0: a permit
      -- comes back when a call ends, which nothing predicts.
      check = function(key, p, now, v)
        local nows = string.format('%d', now)
        local held = call('ZCOUNT', key, '(' .. nows, '+inf')
        local ahead = 0
        v.retry, v.reset, v.receipt, v.now, v.last, v.dead, v.waiting = 0, 0, nil, now, now, nil, false
        if held > 0 then
          local top = call('ZRANGE', key, -1, -1, 'WITHSCORES')
          v.last = tonumber(top[2])
          if v.last >= WAIT_BASE then
            v.waiting = true
            held, v.last, ahead, v.dead = conc_waiting(key, now, nows, p.ticket, p.max)
          end
          v.reset = v.last - now
        end
        v.ok = held + ahead + p.cost <= p.max
        v.remaining = math.max(p.max - held - ahead, 0)
      end,

      -- commit takes a permit; a waiter's place goes with it.
      commit = function(key, p, now, v)
        local id = redis_time()
        local c = tonumber(call('ZSCORE', key, 'n'))
        if c ~= nil and -c >= id then
          id = 1 - c
        end
        local expiry = now + p.window
        local ids = string.format('%d', id)
        call('ZADD', key, string.format('%d', expiry), ids, string.format('%d', -id), 'n')
        call('ZREMRANGEBYSCORE', key, 0, string.format('%d', now))
        conc_drop(key, v.dead)
        if p.ticket > 0 then
          local place = conc_place(key, p.ticket)
          if place then
            call('ZREM', key, place)
          end
        end
        local last = math.max(v.last, expiry)
        conc_expire(key, now, last, v.waiting)
        v.remaining = v.remaining - p.cost
        v.reset = last - now
        v.receipt = id
      end,

      -- A denial drops the expired permits and dead places that check
      -- skipped.
      settle = function(key, v)
        call('ZREMRANGEBYSCORE', key, 0, string.format('%d', v.now))
        conc_drop(key, v.dead)
      end,

      -- queue keeps the place of a waiting call that was not admitted, for
      -- p.wait µs more (at most WAIT_LIFE_MAX): the place of p.ticket
      -- while it is there, else a new one, at the end of the line. A call
      -- that had none joins only when this limit denied it (v.ok false). It
      -- returns the place's ticket, or 0 for none.
      queue = function(key, p, now, v)
        if p.wait <= 0 or p.shadow or (p.ticket == 0 and v.ok) then
          return 0
        end
        local live = string.format('%d', now + math.min(p.wait, WAIT_LIFE_MAX))
        local ticket, old = p.ticket, nil
        if ticket > 0 then
          old = conc_place(key, ticket)
        end
        if old == nil then
          ticket = redis_time()
          local c = tonumber(call('ZSCORE', key, 'n'))
          if c ~= nil and -c >= ticket then
            ticket = 1 - c
          end
        end
        local ts = string.format('%d', ticket)
        call('ZADD', key, string.format('%d', WAIT_BASE + ticket), 'w' .. live .. ':' .. ts)
        if old then
          call('ZREM', key, old)
        else
          call('ZADD', key, string.format('%d', -ticket), 'n')
        end
        conc_drop(key, v.dead)
        conc_expire(key, now, v.last, true)
        return ticket
      end,

      -- leave gives up the place of p.ticket, if it is there.
      leave = function(key, p)
        local place = p.ticket > 0 and conc_place(key, p.ticket)
        if place then
          call('ZREM', key, place)
        end
      end,

      -- release removes the permit p.receipt, and reports whether it was
      -- lost: gone, or expired at now (and then removed all the same).
      release = function(key, p, now)
        return conc_release(key, p.receipt, now)
      end,

      -- renew extends every permit of ps (those of one call on keys ks, the
      -- concurrency limits among them) to now plus its lease, if each is
      -- live; otherwise it extends none. It returns, per limit, whether the
      -- permit was lost, and whether all were renewed.
      renew = function(ks, ps, now)
        local lost, all = {}, true
        for i = 1, #ks do
          lost[i] = live(ks[i], string.format('%d', ps[i].receipt), now) == nil
          all = all and not lost[i]
        end
        if all then
          for i = 1, #ks do
            local expiry = now + ps[i].window
            call('ZADD', ks[i], 'XX', string.format('%d', expiry), string.format('%d', ps[i].receipt))
            call('ZREMRANGEBYSCORE', ks[i], 0, string.format('%d', now))
            -- The key outlives its latest permit, which may be another's,
            -- and the places of calls waiting.
            local first = call('ZCOUNT', ks[i], '-inf', '(' .. WAIT_BASE_S)
            local top = call('ZRANGE', ks[i], first - 1, first, 'WITHSCORES')
            conc_expire(ks[i], now, tonumber(top[2]), top[3] ~= nil)
          end
        end
        return lost, all
      end,

      -- A concurrency limit is never charged: its cost is its permit.
      refund = function() end,
      charge = function() end,
    }
  end
end
