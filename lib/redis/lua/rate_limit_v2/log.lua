--[[
  log: a limit's exact window, a sorted set of its requests (score = time in ms, member = request
  id; a cost of c adds <member>#2 .. <member>#c at the same time). An entry whose score is
  <= now_ms - window_ms has left the window.
    read_log(lim, now_ms, writes)         -> {count, ahead (its newest time if after now_ms), now_text,
                                             cutoff_text}, nil for a hash; writes: drops what left first
    record_log(lim, now_ms, member, cost) -> the cost added (0: a retry); TTL until the newest entry leaves
    newest_score(key)                     -> the time of the key's newest entry, ms
    until_entry_leaves(key, cutoff_text, window_ms, now_ms, offset) -> ms until an entry leaves
]]

local ZADD_CHUNK = 1000 -- entries per ZADD when a costly request adds many

-- When the entry at `offset` in the window (0: the oldest) leaves it, ms from now.
local function until_entry_leaves(key, cutoff_text, window_ms, now_ms, offset)
  local entry = call('ZRANGEBYSCORE', key, '(' .. cutoff_text, '+inf', 'WITHSCORES', 'LIMIT', offset, 1)
  return ceil(tonumber(entry[2]) + window_ms - now_ms)
end

local function newest_score(key)
  return tonumber(call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
end

-- ZREMRANGEBYSCORE then ZCARD is cheaper than ZCOUNT, which walks a small sorted set entry by entry.
local function read_log(lim, now_ms, writes)
  local key, now_text, cutoff_text = lim.key, digits(now_ms), digits(now_ms - lim.window_ms)
  local later = protected_call('ZCOUNT', key, '(' .. now_text, '+inf')
  if type(later) == 'table' then
    return not is_wrong_type(later) and error(later.err) or nil
  end
  local state = { count = 0, ahead = nil, now_text = now_text, cutoff_text = cutoff_text }
  if writes then
    call('ZREMRANGEBYSCORE', key, '-inf', cutoff_text)
    state.count = call('ZCARD', key)
  else
    state.count = call('ZCOUNT', key, '(' .. cutoff_text, '+inf')
  end
  if later > 0 then
    state.ahead = newest_score(key)
  end
  return state
end

local function record_log(lim, now_ms, member, cost)
  local key, state = lim.key, lim.state
  local now_text = state.now_text
  if call('ZADD', key, 'NX', now_text, member) == 0 then
    return 0
  end
  local k = 2
  while k <= cost do
    local args, last = {}, min(cost, k + ZADD_CHUNK - 1)
    for j = k, last do
      args[#args + 1] = now_text
      args[#args + 1] = member .. '#' .. j
    end
    call('ZADD', key, unpack(args))
    k = last + 1
  end
  -- Rounded up: a key written by v1 may hold fractional times.
  state.ahead = state.ahead or now_ms
  call('PEXPIRE', key, digits(ceil(state.ahead + lim.window_ms - now_ms)))
  state.count = state.count + cost
  return cost
end
