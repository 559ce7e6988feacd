-- head.lua: first lines of every governor script that takes the resource
-- KEYS (see lib.lua): the keys, the server's time, and the values every
-- script shares. An operation's fast path, if it has one, comes right
-- after it, before the helpers of lib.lua are built (building them costs
-- more than the whole fast path's Lua). Its first line is the fast
-- marker, and it ends at the lib marker (see embed.go), so that tests can
-- drop it and prove that both ways leave the same state.

local H, S, Q, QE, QD, E = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]

local t = redis.call('TIME')
local sec, usec = t[1] + 0, t[2] + 0
local now = sec * 1000 + (usec - usec % 1000) / 1000

-- A fencing token is at least the server time in microseconds, so that
-- tokens keep increasing even after a restart that lost every key: a new
-- token is math.max(last + 1, FLOOR).
local FLOOR = sec * 1000000 + usec

-- A lease id of 40 characters is the SHA-1 of its secret, in hex: the
-- id is public, the secret proves ownership. A script that renews,
-- releases, cancels or claims lease id first checks proven(id, secret)
-- (governor.OwnerProven in Go) and changes nothing when it fails. Ids of
-- other lengths were granted before secrets and need none.
local IDLEN = 40 -- len(governor.LeaseIDOf(secret)): hex SHA-1
local function proven(id, secret)
  return #id ~= IDLEN or redis.sha1hex(secret) == id
end

-- How long forget.lua's tombstone lasts, ms (backendkit.Tombstone).
local TOMBSTONE_MS = 2592000000

-- minexp when H is empty: later than any expiry.
local NONE = 9007199254740992

-- A holder's record, in S under '#' .. lease id: "weight ttl_ms token
-- acquired_ms declaration" (Go's reader.holders reads it; the last
-- heartbeat is the expiry minus ttl_ms). string.format(REC, weight, ttl,
-- token, acquired) .. declaration writes one; string.match(r, REC_NUMS)
-- gives its weight, ttl and token; string.gsub(r, REC_TTL, '%1' .. ttl,
-- 1) sets its ttl.
local REC = '%d %d %d %d '
local REC_NUMS = '^(%d+) (%d+) (%d+) '
local REC_TTL = '^(%d+ )%d+'

-- REC_ACQ gives a holder record's acquired_ms; REC_W_ACQ its weight and
-- acquired_ms.
local REC_ACQ = '^%d+ %d+ %d+ (%d+) '
local REC_W_ACQ = '^(%d+) %d+ %d+ (%d+) '

-- The last HOLDS (backendkit.HoldHistory) hold durations (ms), a ring in S:
-- holdn counts the holds recorded, and hold N % HOLDS, under 'hold:' ..
-- (N % HOLDS), is the duration of hold N (from 0). One small field read
-- and two written per hold (hold() in lib.lua); status.lua reads them.
local HOLDS = 50

-- A waiter's record, in QD under its id: "weight ttl_ms enqueued_ms
-- channel declaration" (Go's reader.waiters reads it); weight 0: an
-- exclusive waiter, which takes the limit in force when granted.
-- string.format(WREC, weight, ttl, enqueued, channel) .. declaration
-- writes one; string.match(r, WREC_ALL) gives every field.
local WREC = '%d %d %d %s '
local WREC_ALL = '^(%d+) (%d+) (%d+) (%S+) (.*)$'

