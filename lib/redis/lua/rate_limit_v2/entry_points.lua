--[[
  entry_points: the three functions the library registers, as its header states their KEYS, ARGV
  and replies. Each checks every argument before its first write.
    sliding_allow(keys, args)       sliding_allow_v2: one decision
    sliding_peek(keys, args)        sliding_peek_v2: one decision that writes nothing
    sliding_allow_many(keys, args)  sliding_allow_many_v2: a batch, decided in order
]]

local function sliding_allow(keys, args)
  if not call then bind_globals() end
  local limits, cost, overrides_from = limits_of_call(keys, args, 5)
  local now_ms, max_skew_ms = resolve_now(args[1]), whole(number_of(args[3]), 0, MAX_TIME_MS)
  if not limits or not now_ms or not max_skew_ms or not is_valid_member(args[2]) then
    return invalid_arguments()
  end
  local reply = new_reply(#limits)
  return read_overrides(keys, overrides_from, #keys, limits)
    or decide(reply, 0, limits, now_ms, args[2], max_skew_ms, cost) or reply
end

local function sliding_peek(keys, args)
  if not call then bind_globals() end
  local limits, cost, overrides_from = limits_of_call(keys, args, 3)
  local now_ms = resolve_now(args[1])
  if not limits or not now_ms then
    return invalid_arguments()
  end
  local reply = new_reply(#limits)
  return read_overrides(keys, overrides_from, #keys, limits) or decide(reply, 0, limits, now_ms, nil, nil, cost)
    or reply
end

local function batch_decisions(keys, list)
  local decisions, at, taken = {}, 1, 0
  while at <= #list do
    local decision = batch_decision(keys, list, at, taken)
    if not decision then
      return nil
    end
    decisions[#decisions + 1] = decision
    at, taken = at + 4 + 4 * #decision.limits, decision.last
  end
  return taken == #keys and decisions or nil
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
  -- Every decision is checked before the first one writes; a value of the wrong JSON type fails a
  -- comparison, which the protected call turns into invalid arguments.
  local parsed, decisions = pcall(batch_decisions, keys, list)
  if not parsed or not decisions then
    return invalid_arguments()
  end
  -- One EXISTS for the override keys of every decision: usually none exists, and none is read.
  local override_keys = {}
  for _, d in ipairs(decisions) do
    for i = d.overrides_from, d.last do
      override_keys[#override_keys + 1] = keys[i]
    end
  end
  local overrides = #override_keys > 0 and call('EXISTS', unpack(override_keys)) > 0
  local reply, length = {}, 0
  for _, d in ipairs(decisions) do
    local now_ms = d.now == '*' and resolve_now('*') or d.now
    local failed = overrides and read_overrides(keys, d.overrides_from, d.last, d.limits)
      or decide(reply, length, d.limits, now_ms, d.member, max_skew_ms, d.cost)
    if failed then
      return failed
    end
    length = length + 1 + 7 * #d.limits
  end
  return reply
end
