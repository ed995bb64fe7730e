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
