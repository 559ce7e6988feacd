-- adapt.lua: adaptive concurrency (AIMD) of a provider's resource, for
-- every process: the limit in force moves between a minimum and the
-- configured maximum, halved on a rate-limit signal, one more after a run
-- of successes. It is kept in adapt (in_force() and adaptive() in lib-slow.lua
-- make it the limit in force while no limit is set live), with adapt_max
-- (the maximum it runs under: another maximum starts over from it) and
-- adapt_ok (successes since the last change).
-- KEYS: see lib.lua.
-- ARGV: 1 'signal' | 'success', 2 maximum (the configured limit), 3
--       minimum, 4 successes before one more
-- Returns {adapt, adapt_max, adapt_ok} after the change.
local op, hi, lo, every = ARGV[1], ARGV[2] + 0, ARGV[3] + 0, ARGV[4] + 0
load({'limit', 'used', 'qlen', 'minexp', 'drift', 'live', 'adapt', 'adapt_max', 'adapt_ok'})
settle()
local a, ok = m.adapt, m.adapt_ok
if a <= 0 or m.adapt_max ~= hi then
  a, ok = hi, 0
  set('adapt_max', hi)
end
if op == 'signal' then
  a, ok = math.floor(a / 2), 0
elseif op == 'success' then
  ok = ok + 1
  if ok >= every then
    a, ok = a + 1, 0
  end
else
  error('governor: adapt.lua: unknown op ' .. tostring(op), 0)
end
a = math.max(lo, math.min(hi, a))
if a == hi then
  ok = 0 -- at the maximum: nothing to count towards
end
set('adapt', a)
set('adapt_ok', ok)
if (get('live') or 0) == 0 and m.limit ~= 0 and m.limit ~= a then
  set('limit', a)
  if m.drift ~= 0 then
    set('drift', 0)
  end
  if get('qlen') > 0 then
    slow()
    promote() -- a higher limit hands room on at once
  end
end
return finish({a, hi, ok})
