--[[
  limit_key: a limit's key, whichever it holds: a sorted set is read as a log, a hash in its own
  precision, a missing key as the limit's own kind. A state with precision_ms is bucketed.
    read_key(lim, now_ms, writes)     -> the key's state (log or bucketed_read), `ahead` its newest time
                                         after now_ms
    holds(lim, member)                -> whether member is recorded already (a retry), asked once
    record(lim, now_ms, member, cost) -> the cost added; 0 for a retry (ZADD, the ids, or ZSCORE)
]]

local function read_key(lim, now_ms, writes)
  if lim.precision_ms == 0 then
    local state = read_log(lim, now_ms, writes)
    if state then
      return state
    end
  end
  local state = read_hash(lim.key, now_ms, lim.window_ms, lim.precision_ms)
  if state == nil then
    -- Not a hash: a sorted set, or a key of another type, whose WRONGTYPE error this read raises.
    return read_log(lim, now_ms, writes) or call('ZCARD', lim.key)
  end
  if state.newest and state.newest * state.precision_ms > now_ms then
    state.ahead = state.newest * state.precision_ms
  end
  return state
end

local function holds(lim, member)
  if lim.retried == nil then
    if lim.state.precision_ms then
      lim.retried = ids_hold(lim.state.ids, member)
    else
      lim.retried = call('ZSCORE', lim.key, member) ~= false
    end
  end
  return lim.retried
end

local function record(lim, now_ms, member, cost)
  if lim.state.precision_ms == nil and lim.precision_ms == 0 then
    return record_log(lim, now_ms, member, cost)
  elseif holds(lim, member) then
    return 0
  elseif lim.state.precision_ms == nil then
    -- A log read by a bucketed limit becomes a hash of the limit's precision.
    lim.state = log_as_buckets(lim)
  end
  record_buckets(lim.key, lim.state, now_ms, lim.window_ms, member, cost, lim.effective)
  return cost
end
