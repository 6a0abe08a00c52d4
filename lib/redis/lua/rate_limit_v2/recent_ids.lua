--[[
  recent_ids: the request ids a bucketed key remembers to recognise retries (its field "ids"):
  newest first, space-separated, at most RECENT_IDS within RECENT_IDS_BYTES, so that the value
  stays within Redis' compact listpack encoding (64 bytes). An older retry counts twice.
    ids_hold(ids, member) -> whether member is one of them; with_id(ids, member) -> member in front
]]

local RECENT_IDS       = 8
local RECENT_IDS_BYTES = 64

-- Searched in place: a match must be a whole id, between spaces.
local function ids_hold(ids, member)
  local at = find(ids, member, 1, true)
  while at do
    local after = at + #member
    if (at == 1 or byte(ids, at - 1) == 32) and (after > #ids or byte(ids, after) == 32) then
      return true
    end
    at = find(ids, member, at + 1, true)
  end
  return false
end

-- The ids kept are a prefix of the old list, found by its spaces rather than split and joined again.
local function with_id(old, member)
  local budget = RECENT_IDS_BYTES - #member - 1
  local cut, from = 0, 1
  for _ = 2, RECENT_IDS do
    local space = find(old, ' ', from, true)
    local stop = space and space - 1 or #old
    if stop < from or stop > budget then
      break
    end
    cut = stop
    if not space then
      break
    end
    from = space + 1
  end
  if cut > 0 then
    return member .. ' ' .. sub(old, 1, cut)
  end
  return member
end
