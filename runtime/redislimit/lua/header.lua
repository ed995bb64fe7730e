-- Shared by every algorithm: the registry. Concatenated first; see main.lua.
--
-- Redis runs the whole script again on every call, so what it defines at
-- the top (each function, table and upvalue is an allocation, about 1k
-- instructions to create and collect) is kept to the registry, floordiv,
-- call, lone and one number, and each algorithm's table of functions is
-- built only by a run that uses it. A decision's cost is then mostly its
-- redis.call()s, the calls into C (string.format, tonumber, struct, math:
-- each costs more than dozens of Lua operations), its Lua function calls
-- (several hundred instructions each) and the tables it creates, and the
-- algorithms keep all four few: arguments go to Redis as strings (Redis
-- formats a Lua number argument itself, more slowly), each formatted once
-- with string.format('%d', n), exact for the whole numbers below 2^53 that
-- every value stored or compared here is (%d converts to a 64-bit integer;
-- tostring would print 1e+15, and '%.0f' is slower); a verdict fills a
-- table that main.lua reuses.

-- The registry, by algorithm code (specsByCode in algorithm.go): algos[code]
-- builds the algorithm's table of check, commit, refund, charge and,
-- optionally, settle; decide1s[code] is its decide1, if it has one (see main.lua), or
-- false. Sized for every code (Go writes one false per code there), so
-- registering allocates nothing more.
local algos, decide1s = {UNREGISTERED}, {UNREGISTERED}

-- call is redis.call, looked up once: a decision makes several.
local call = redis.call

-- lone is true for a script call of one call of one limit, which main.lua
-- decides with its algorithm's decide1 before defining anything: an
-- algorithm with a decide1 then leaves algos[code] undefined, as each
-- function a run defines costs it an allocation and its collection.
local lone = ARGV[1] == UNIFORM and #KEYS == 1 and not ARGV[3]

-- floordiv is math.floor(a / b), to the bit (Lua's % is a - floor(a/b)*b,
-- exact for these whole numbers), without the call into C.
local function floordiv(a, b)
  return (a - a % b) / b
end

-- ttl_pad_ms is added to every key's lifetime when callers pass their own
-- clock (main.lua sets it): Redis expires keys on its own clock, which may
-- disagree with the callers'. Reading a state after its contents stopped
-- counting is the same as reading no state, so a longer life is always safe;
-- a shorter one would forget admissions that still count.
--
-- Each commit sets its key's lifetime (PEXPIRE, or SET's PX) to
-- ceil(reset/1000) + ttl_pad_ms ms, reset being the µs until the state
-- stops counting: at least 1 µs after an admission, so never 0 ms.
local ttl_pad_ms = 0
