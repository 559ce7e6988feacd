-- observe.lua: add observations to a backend-kept histogram.
-- KEYS: 1 the resource's stats hash (fields NAME:I, the count of bucket
--       I, and NAME:sum, the sum in microseconds), 2 its state hash
-- ARGV: 1 histogram name, 2 sum of the observations in microseconds,
--       3.. the count to add to each bucket, from bucket 0
-- Returns 1, or 0 when the resource has no state (it was forgotten since
-- the observations were made: they go with it; its tombstone, forget.lua,
-- has no limit).
if not redis.call('HGET', KEYS[2], 'limit') then
  return 0
end
local name = ARGV[1]
for i = 3, #ARGV do
  if ARGV[i] ~= '0' then
    redis.call('HINCRBY', KEYS[1], name .. ':' .. (i - 3), ARGV[i])
  end
end
if ARGV[2] ~= '0' then
  redis.call('HINCRBY', KEYS[1], name .. ':sum', ARGV[2])
end
return 1
