--[[
  limits: a call's decisions in a batch's form (now_ms, member, cost, n, n quadruples, ..), checked,
  then each decision's limits with their keys.
    as_list(args, first, member)           -> a single call's decision in that form (cost at
                                              args[first - 1], quadruples from args[first]), or nil
    check_decision(keys, list, at, taken, override_keys)
                                           -> (at, taken) of the next decision, once the one at
                                              list[at] (keys after keys[taken]) is checked and its
                                              override keys appended; nil when it is invalid
    decision_limits(keys, list, at, taken) -> a checked decision's limits, in tables reused call-long
                                              (fields set here and by later parts); its last key
]]

local MAX_SUB_WINDOWS = 1000
local MAX_LOG_COST    = 10000

local function is_valid_limit(window_ms, limit, precision_ms, flags, cost)
  window_ms, limit = whole(window_ms, 1, MAX_TIME_MS), whole(limit, cost, MAX_LIMIT)
  precision_ms, flags = whole(precision_ms, 0, MAX_TIME_MS), whole(flags, 0, 3)
  if not (window_ms and limit and precision_ms and flags) then
    return false
  end
  return not (precision_ms == 0 and cost > MAX_LOG_COST
    or precision_ms > 0 and (precision_ms > window_ms or window_ms > precision_ms * MAX_SUB_WINDOWS))
end

local function as_list(args, first, member)
  local n = (#args - first + 1) / 4
  if n < 1 or n % 1 ~= 0 then
    return nil
  end
  -- false, not nil, for a missing or unreadable value: the list keeps no hole.
  local list = { args[1] == '*' and '*' or tonumber(args[1]) or false, member or false,
                 number_of(args[first - 1]) or false, n, number_of(args[first]) or false,
                 number_of(args[first + 1]) or false, number_of(args[first + 2]) or false,
                 number_of(args[first + 3]) or false }
  for i = first + 4, #args do
    list[#list + 1] = number_of(args[i]) or false
  end
  return list
end

-- Every decision is checked before the first one writes, then each is decided: no table is built
-- per decision (tables and their collection cost more than the checks).
local function check_decision(keys, list, at, taken, override_keys)
  local now_ms, cost, n = list[at], whole(list[at + 2], 1, MAX_TIME_MS), whole(list[at + 3], 1, 1000)
  if now_ms ~= '*' and not whole(now_ms, 0, MAX_TIME_MS) or not is_valid_member(list[at + 1]) or not cost
    or not n then
    return nil
  end
  local last = taken + n
  for i = 1, n do
    local q = at + 4 * i
    if not is_valid_limit(list[q], list[q + 1], list[q + 2], list[q + 3], cost) then
      return nil
    end
    for j = 1, i - 1 do
      if keys[taken + j] == keys[taken + i] then
        return nil
      end
    end
    if list[q + 3] >= 2 then
      last = last + 1
      override_keys[#override_keys + 1] = keys[last]
    end
  end
  if last > #keys then
    return nil
  end
  return at + 4 + 4 * n, last
end

local pool, pooled = {}, {}

local function decision_limits(keys, list, at, taken)
  local n = list[at + 3]
  local last = taken + n
  for i = 1, n do
    local q = at + 4 * i
    local lim, flags = pool[i] or {}, list[q + 3]
    pool[i], pooled[i] = lim, lim
    lim.window_ms, lim.precision_ms, lim.shadow, lim.has_override = list[q], list[q + 2], flags % 2 == 1, flags >= 2
    lim.kind, lim.effective, lim.key, lim.override_key = 0, list[q + 1], keys[taken + i], false
    lim.state, lim.room, lim.retried = false, false, nil
    if lim.has_override then
      last = last + 1
      lim.override_key = keys[last]
    end
  end
  for i = n + 1, #pooled do
    pooled[i] = nil
  end
  return pooled, last
end
