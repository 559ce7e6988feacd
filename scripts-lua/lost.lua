-- lost.lua: count a lease its holder declared lost.
-- KEYS: see lib.lua.
-- ARGV: none
-- Returns the new count.
return redis.call('HINCRBY', S, 'lost', 1)
