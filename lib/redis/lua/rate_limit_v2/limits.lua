--[[
  limits: the limits of one decision, read from its numbers, with their keys.
    is_valid_limit(window_ms, limit, precision_ms, flags, cost)
                                          -> whether the four numbers make a limit for the cost
    set_limit(lim, window_ms, limit, precision_ms, flags)
                                          -> lim, every field set: {window_ms, precision_ms, shadow,
                                             has_override, kind, effective, key, override_key, state,
                                             room, retried}, its decision's fields set by later parts
    assign_keys(keys, first, limits)      -> the index of the last key taken from keys[first]: the
                                             limits' keys, then the override keys of those that have
                                             one, in order; nil for a repeated key
    limits_of_call(keys, args, first)     -> limits, cost, index of the first override key: the cost
                                             at args[first - 1], quadruples from args[first]; or nil
    check_decision(keys, list, at, taken, override_keys)
                                          -> where the next decision of a batch starts (at, taken):
                                             the decision at list[at], its keys after keys[taken],
                                             checked, its override keys appended; nil when invalid
    batch_limits(keys, list, at, taken)   -> the limits of a checked decision, in tables reused by
                                             every decision of the call; the index of its last key
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

local function set_limit(lim, window_ms, limit, precision_ms, flags)
  lim.window_ms, lim.precision_ms, lim.shadow, lim.has_override = window_ms, precision_ms, flags % 2 == 1, flags >= 2
  lim.kind, lim.effective, lim.key, lim.override_key = 0, limit, false, false
  lim.state, lim.room, lim.retried = false, false, nil
  return lim
end

local function assign_keys(keys, first, limits)
  local n = #limits
  local at = first + n - 1
  for i = 1, n do
    local lim = limits[i]
    lim.key = keys[first + i - 1]
    for j = 1, i - 1 do
      if limits[j].key == lim.key then
        return nil
      end
    end
    if lim.has_override then
      at = at + 1
      lim.override_key = keys[at]
    end
  end
  return at
end

local function limits_of_call(keys, args, first)
  local n = (#args - first + 1) / 4
  local cost = whole(number_of(args[first - 1]), 1, MAX_TIME_MS)
  if n < 1 or n % 1 ~= 0 or not cost then
    return nil
  end
  local limits = {}
  for i = 1, n do
    local at = first + 4 * (i - 1)
    local window_ms, limit = number_of(args[at]), number_of(args[at + 1])
    local precision_ms, flags = number_of(args[at + 2]), number_of(args[at + 3])
    if not is_valid_limit(window_ms, limit, precision_ms, flags, cost) then
      return nil
    end
    -- Every field a decision sets is named at once: a table sized once, not grown field by field.
    limits[i] = set_limit({ window_ms = 0, precision_ms = 0, shadow = false, has_override = false, kind = 0,
                            effective = 0, key = false, override_key = false, state = false, room = false },
                          window_ms, limit, precision_ms, flags)
  end
  if assign_keys(keys, 1, limits) ~= #keys then
    return nil
  end
  return limits, cost, n + 1
end

-- A batch checks every decision before the first one writes, then decides them one by one: it
-- builds no table per decision (tables and their collection cost more than the checks).
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

local function batch_limits(keys, list, at, taken)
  local n = list[at + 3]
  for i = 1, n do
    local q = at + 4 * i
    pool[i] = pool[i] or {}
    pooled[i] = set_limit(pool[i], list[q], list[q + 1], list[q + 2], list[q + 3])
  end
  for i = n + 1, #pooled do
    pooled[i] = nil
  end
  return pooled, assign_keys(keys, taken + 1, pooled)
end
