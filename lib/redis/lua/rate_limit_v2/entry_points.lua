--[[
  entry_points: sliding_allow (sliding_allow_v2), sliding_peek and sliding_allow_many, as the
  library's header states them: each puts its decisions in a batch's form and decides them here.
]]

-- Every decision's numbers and keys, checked before the first one writes: the override keys, or nil.
local function checked_list(keys, list)
  local override_keys, at, taken = {}, 1, 0
  while at <= #list do
    at, taken = check_decision(keys, list, at, taken, override_keys)
    if not at then
      return nil
    end
  end
  return taken == #keys and override_keys or nil
end

-- The decisions of `list` in order, their replies concatenated; max_skew_ms nil: peeks.
local function decide_list(keys, list, max_skew_ms)
  -- A value of the wrong JSON type fails a comparison, which the protected call turns into nil.
  local checked, override_keys = pcall(checked_list, keys, list)
  if not checked or not override_keys then
    return invalid_arguments()
  end
  -- One EXISTS for the override keys of every decision: usually none exists, and none is read.
  local overrides = #override_keys > 0 and call('EXISTS', unpack(override_keys)) > 0
  local reply, length, at, taken = #list == 8 and { 0, 0, 0, 0, 0, 0, 0, 0 } or {}, 0, 1, 0
  while at <= #list do
    local n, flags, now_ms = list[at + 3], list[at + 7], list[at] == '*' and resolve_now('*') or list[at]
    local failed, last = false, taken + n
    if max_skew_ms and n == 1 and list[at + 2] == 1 and list[at + 6] == 0 and flags % 2 == 0 and not overrides then
      failed, last = decide_one_log(reply, length, keys[taken + 1], now_ms, list[at + 1], max_skew_ms, list[at + 4],
                                    list[at + 5]), taken + 1 + flags / 2
    end
    if failed == false then
      local limits
      limits, last = decision_limits(keys, list, at, taken)
      failed = overrides and read_overrides(limits)
        or decide(reply, length, limits, now_ms, list[at + 1], max_skew_ms, list[at + 2])
    end
    if failed then
      return failed
    end
    length, at, taken = length + 1 + 7 * n, at + 4 + 4 * n, last
  end
  return reply
end

local function sliding_allow(keys, args)
  if not call then bind_globals() end
  local list, max_skew_ms = as_list(args, 5, args[2]), whole(number_of(args[3]), 0, MAX_TIME_MS)
  if not list or not max_skew_ms then
    return invalid_arguments()
  end
  return decide_list(keys, list, max_skew_ms)
end

local function sliding_peek(keys, args)
  if not call then bind_globals() end
  local list = as_list(args, 3, 'peek') -- a member for the check only: a peek records nothing
  return list and decide_list(keys, list, nil) or invalid_arguments()
end

local function sliding_allow_many(keys, args)
  if not call then bind_globals() end
  if #args ~= 2 or #keys < 1 then
    return invalid_arguments()
  end
  local max_skew_ms = whole(tonumber(args[1]), 0, MAX_TIME_MS)
  local ok, list = pcall(json_decode, args[2])
  if not max_skew_ms or not ok or type(list) ~= 'table' then
    return invalid_arguments()
  end
  return decide_list(keys, list, max_skew_ms)
end
