--[[
  limits: the limits of one decision, read from its numbers, with their keys.
    new_limit(window_ms, limit, precision_ms, flags, cost)
                                          -> a limit, or nil when a number is missing or out of range
                                             for the cost: {window_ms, precision_ms, shadow,
                                             has_override, kind, effective, key, override_key, state,
                                             room, retried}, its decision's fields set by later parts
    assign_keys(keys, first, limits)      -> the index of the last key taken from keys[first]: the
                                             limits' keys, then the override keys of those that have
                                             one, in order; nil for a repeated key
    limits_of_call(keys, args, first)     -> limits, cost, index of the first override key: the cost
                                             at args[first - 1], quadruples from args[first]; or nil
    batch_decision(keys, list, at, taken) -> {limits, now, member, cost, overrides_from, last}: the
                                             decision at list[at] of a batch, its keys after
                                             keys[taken]; nil when it is invalid
]]

local MAX_SUB_WINDOWS = 1000
local MAX_LOG_COST    = 10000

local function new_limit(window_ms, limit, precision_ms, flags, cost)
  window_ms, limit = whole(window_ms, 1, MAX_TIME_MS), whole(limit, cost, MAX_LIMIT)
  precision_ms, flags = whole(precision_ms, 0, MAX_TIME_MS), whole(flags, 0, 3)
  if not (window_ms and limit and precision_ms and flags) then
    return nil
  end
  if precision_ms == 0 and cost > MAX_LOG_COST
    or precision_ms > 0 and (precision_ms > window_ms or window_ms > precision_ms * MAX_SUB_WINDOWS) then
    return nil
  end
  -- Every field a decision sets is named here: a table sized once, not grown field by field.
  return { window_ms = window_ms, precision_ms = precision_ms, shadow = flags % 2 == 1,
           has_override = flags >= 2, kind = 0, effective = limit, key = false, override_key = false,
           state = false, room = false, retried = nil }
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
    limits[i] = new_limit(number_of(args[at]), number_of(args[at + 1]), number_of(args[at + 2]),
                          number_of(args[at + 3]), cost)
    if not limits[i] then
      return nil
    end
  end
  if assign_keys(keys, 1, limits) ~= #keys then
    return nil
  end
  return limits, cost, n + 1
end

local function batch_decision(keys, list, at, taken)
  local now_ms, cost, n = list[at], whole(list[at + 2], 1, MAX_TIME_MS), whole(list[at + 3], 1, 1000)
  if now_ms ~= '*' and not whole(now_ms, 0, MAX_TIME_MS) or not is_valid_member(list[at + 1]) or not cost
    or not n then
    return nil
  end
  local limits = {}
  for i = 1, n do
    local q = at + 4 * i
    limits[i] = new_limit(list[q], list[q + 1], list[q + 2], list[q + 3], cost)
    if not limits[i] then
      return nil
    end
  end
  local last = assign_keys(keys, taken + 1, limits)
  if not last or last > #keys then
    return nil
  end
  return { limits = limits, now = now_ms, member = list[at + 1], cost = cost, overrides_from = taken + n + 1,
           last = last }
end
