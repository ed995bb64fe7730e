-- Shared by every algorithm: the registry and small helpers. Concatenated
-- first; see main.lua.

local algos = {}

-- Redis converts Lua numbers to integers by truncation; every value this
-- script returns or stores is a whole number of µs or units.
local function ceil_div(a, b)
  return math.floor((a + b - 1) / b)
end

local function fmt(n)
  return string.format('%.0f', n)
end

-- ttl_pad_ms is added to every key's lifetime when callers pass their own
-- clock (main.lua sets it): Redis expires keys on its own clock, which may
-- disagree with the callers'. Reading a state after its contents stopped
-- counting is the same as reading no state, so a longer life is always safe;
-- a shorter one would forget admissions that still count.
local ttl_pad_ms = 0

-- ttl_ms is the PEXPIRE argument for a state that stops counting reset_us
-- from now: rounded up to the millisecond, never 0.
local function ttl_ms(reset_us)
  return fmt(math.max(1, ceil_div(reset_us, 1000)) + ttl_pad_ms)
end
