-- head.lua: first lines of every governor script that takes the resource
-- KEYS (see lib.lua): the keys and the server's time. An operation's fast
-- path, if it has one, comes right after it, before the helpers of lib.lua
-- are built (building them costs more than the whole fast path's Lua).

local H, S, Q, QE, QD, E = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]

local t = redis.call('TIME')
local sec, usec = t[1] + 0, t[2] + 0
local now = sec * 1000 + (usec - usec % 1000) / 1000

-- minexp when H is empty: later than any expiry.
local NONE = 9007199254740992

