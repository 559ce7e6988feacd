-- lib-supersede.lua: the prelude's last part (after lib-policy.lua):
-- supersede and cancel-in-progress.

-- Supersede (issue 15; governor.AcquireOptions.Supersede): S field
-- '%w' .. key names the last waiter queued with supersede key key, and
-- '%h' .. key the last holder granted with it. supersede(id, key,
-- cancel) is called for a new request with key: the older waiter with
-- key leaves the queue, told by a withdrawn event ("superseded: ...")
-- and on its channel; with cancel (cancel-in-progress), the holder with
-- key is marked cancelled (cancel_holder()).
-- cancel_holder marks holder h cancelled (CIP above), with the
-- cancelled_in_progress event naming by and detail; a lease marked
-- already, or gone, is left as it is.
local function cancel_holder(h, detail, by)
  local r = record(h)
  if not r or cancelled(r) then
    return
  end
  local _, _, tok = parse_rec(h, r)
  event('cancelled_in_progress', h, tok, detail, by)
  local mark = CIP .. string.format('%d', now)
  if string.sub(r, -2) == '{}' then
    set('#' .. h, string.sub(r, 1, -2) .. mark .. '}')
  else
    set('#' .. h, string.sub(r, 1, -2) .. ',' .. mark .. '}')
  end
end

-- who returns the user and session a declaration (JSON) names, '' for
-- what it does not.
local function who(decl)
  local ok, d = pcall(cjson.decode, decl or '')
  if not ok or type(d) ~= 'table' then
    return '', ''
  end
  return type(d.user) == 'string' and d.user or '', type(d.session) == 'string' and d.session or ''
end

-- supersede(id, key, cancel, others, decl): decl is id's declaration;
-- without others, a holder of another OS user (its declaration's user)
-- is not cancelled: supersede then changes nothing and returns that
-- holder and its user.
local function supersede(id, key, cancel, others, decl)
  slow()
  local h, user, session
  if cancel then
    h = redis.call('HGET', KEYS[2], '%h' .. key)
    local r = h and h ~= id and record(h)
    if not r then
      h = nil
    else
      user, session = who(decl)
      local theirs = who(string.match(r, '^%d+ %d+ %d+ %d+ (.*)$'))
      if not others and not cancelled(r) and theirs ~= user then
        return h, theirs
      end
    end
  end
  local old = redis.call('HGET', KEYS[2], '%w' .. key)
  if old and old ~= id then
    pol_as = {} -- not a max_wait drop
    withdraw({old}, 'superseded', id, string.format('a newer waiter with supersede key %s replaced it', key))
    pol_as = nil
  end
  if h then
    cancel_holder(h, string.format('cancelled in progress by %s (user %s, session %s) with supersede key %s', id, user,
      session, key), id)
  end
end

-- superseding records id as the waiter (as 'w') or holder ('h') with
-- supersede key key.
local function superseding(id, key, as)
  set('%' .. as .. key, id)
end
