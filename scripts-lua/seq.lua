-- seq.lua: the next number of a fenced sequence.
-- KEYS: 1 the sequence hash (fields n: last number given, token: the
--       highest fencing token a number was given to)
-- ARGV: 1 the writer's fencing token (decimal)
-- Returns {1, n} with the new number, or {0, highest token} when the
-- writer's token is older than one already used (nothing changes).
local token = ARGV[1]
local have = redis.call('HGET', KEYS[1], 'token')
-- Compare as numbers of equal length first: tokens are decimal integers
-- up to 2^63 that Lua numbers cannot hold exactly.
local function less(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end
if have and less(token, have) then
  return {0, have}
end
redis.call('HSET', KEYS[1], 'token', token)
return {1, redis.call('HINCRBY', KEYS[1], 'n', 1)}
