-- fair_share is capacity.FairShare (Go): in the order of want, then id,
-- each wanter ({id, want}) gets the least of its want and an equal part
-- of what those before it left.
local function fair_share(cap, ws)
  table.sort(ws, function(a, b)
    if a[2] ~= b[2] then
      return a[2] < b[2]
    end
    return a[1] < b[1]
  end)
  local out, left = {}, math.max(cap, 0)
  for i, w in ipairs(ws) do
    local part = math.min(math.max(w[2], 0), math.floor(left / (#ws - i + 1)))
    out[w[1]] = part
    left = left - part
  end
  return out
end
