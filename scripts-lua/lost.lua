-- lost.lua: record that a holder declared its lease lost: a counter and
-- an event.
-- KEYS: see lib.lua.
-- ARGV: 1 lease id, 2 its token
-- Returns the new count.
slow()
event('lost', ARGV[1], ARGV[2], 'the holder could not renew in time')
return redis.call('HINCRBY', KEYS[2], 'lost', 1)
