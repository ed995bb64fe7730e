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
-- this one limit, released by release (SETTLE, whatever the units used), or
-- by conc_release in main.lua's path for a settle of this one limit, and
-- extended by renew (RENEW). The receipt is the
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

-- conc_tnow is Redis's TIME in µs, read once per script run, for ids.
local conc_tnow

-- conc_decide1, the concurrency limit's decide1 (see main.lua): check and
-- commit for a call of this one enforced limit, with no table but a
-- denial's verdict for settle. It decides, records and settles exactly as
-- check, commit and settle below do, in the same commands.
local function conc_decide1(key, now, window, max, burst, cost, alone)
  local nows = string.format('%d', now)
  local held = call('ZCOUNT', key, '(' .. nows, '+inf')
  local last = now
  if held > 0 then
    local top = call('ZRANGE', key, -1, -1, 'WITHSCORES')
    last = tonumber(top[2])
  end
  local remaining = max - held
  if remaining < 0 then
    remaining = 0
  end
  if held + cost > max then
    if alone then
      call('ZREMRANGEBYSCORE', key, 0, nows)
      return false, remaining, 0, last - now, 0
    end
    return false, remaining, 0, last - now, 0, {now = now}
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
  if expiry > last then
    last = expiry
  end
  call('PEXPIRE', key, string.format('%d', floordiv(last - now + 999, 1000) + ttl_pad_ms + CONC_PAD_MS))
  return true, remaining - cost, 0, last - now, id
end
decide1s[CONCURRENCY] = conc_decide1

-- conc_release removes the permit receipt of key, and reports whether it
-- was lost: gone, or expired at now (and then removed all the same). It is
-- release, below, and main.lua's for a settle of one concurrency limit,
-- which builds no table.
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

    -- expire_key sets key's lifetime to outlast the expiry last.
    local function expire_key(key, now, last)
      call('PEXPIRE', key, string.format('%d', floordiv(last - now + 999, 1000) + ttl_pad_ms + CONC_PAD_MS))
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
      -- Permits live at now: their number against max (cost is 1), and the
      -- latest expiry, which is ResetAfter. RetryAfter is 0: a permit comes
      -- back when a call ends, which nothing predicts.
      check = function(key, p, now, v)
        local held = call('ZCOUNT', key, '(' .. string.format('%d', now), '+inf')
        v.ok, v.retry, v.reset, v.receipt, v.now = held + p.cost <= p.max, 0, 0, nil, now
        v.last = now
        if held > 0 then
          local top = call('ZRANGE', key, -1, -1, 'WITHSCORES')
          v.last = tonumber(top[2])
          v.reset = v.last - now
        end
        v.remaining = math.max(p.max - held, 0)
      end,

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
        local last = math.max(v.last, expiry)
        expire_key(key, now, last)
        v.remaining = v.remaining - p.cost
        v.reset = last - now
        v.receipt = id
      end,

      -- A denial drops the expired permits that check skipped.
      settle = function(key, v)
        call('ZREMRANGEBYSCORE', key, 0, string.format('%d', v.now))
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
            -- The key outlives its latest permit, which may be another's.
            local top = call('ZRANGE', ks[i], -1, -1, 'WITHSCORES')
            expire_key(ks[i], now, tonumber(top[2]))
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
