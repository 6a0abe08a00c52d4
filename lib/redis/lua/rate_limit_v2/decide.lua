--[[
  decide(reply, at, limits, now_ms, member, max_skew_ms, cost): one request against its limits (keys
  assigned, overrides read) as the library's header states; its reply after reply[at]. Returns nil,
  or the CLOCKSKEW error reply before anything is written. max_skew_ms nil: a peek (no write, no retry).
]]

local function clock_skew(now_ms, newest_ms, key, max_skew_ms)
  return error_reply(format('CLOCKSKEW now_ms %d is %d ms behind the newest entry of %s (tolerance %d ms)',
                            now_ms, newest_ms - now_ms, key, max_skew_ms))
end

local function decide(reply, at, limits, now_ms, member, max_skew_ms, cost)
  local n, writes = #limits, max_skew_ms ~= nil
  -- The anchor tells a retry: the first enforced limit whose key records an admitted request.
  local anchor, blocked = nil, false
  for i = 1, n do
    local lim = limits[i]
    if lim.kind < EXEMPT then
      lim.state = read_key(lim, now_ms, writes)
    end
    if not lim.shadow then
      blocked = blocked or lim.kind == BLOCK
      if anchor == nil and lim.kind < EXEMPT then
        anchor = lim
      end
    end
  end
  local allowed = 1
  for i = 1, n do
    local lim = limits[i]
    if lim.kind < EXEMPT then
      local ahead = lim.state.ahead
      -- A retry carries its original now_ms, which newer entries may have overtaken since.
      if writes and ahead and ahead - now_ms > max_skew_ms and not holds(anchor or lim, member) then
        return clock_skew(now_ms, ahead, lim.key, max_skew_ms)
      end
      lim.room = lim.state.count + cost <= lim.effective
      if writes and lim.shadow and not lim.room then
        lim.room = holds(lim, member)
      end
    else
      lim.room = lim.kind == EXEMPT
    end
    if not (lim.room or lim.shadow) then
      allowed = 0
    end
  end

  local retry = false
  if writes and allowed == 0 and anchor and not blocked and holds(anchor, member) then
    allowed, retry = 1, true
  end
  if writes and allowed == 1 and not retry then
    -- The anchor first: a retry with room is told by its key (ZADD adding nothing, or its ids).
    if anchor and record(anchor, now_ms, member, cost) == 0 then
      retry = true
    end
    for i = 1, n do
      local lim = limits[i]
      if not retry and lim ~= anchor and lim.room and lim.kind < EXEMPT then
        record(lim, now_ms, member, cost)
      end
    end
  end

  reply[at + 1] = allowed
  for i = 1, n do
    append_limit(reply, at + 7 * i - 6, limits[i], allowed, now_ms, cost)
  end
  return nil
end

-- decide for one enforced log limit at cost 1 that no override touches (most calls), without tables: the
-- same reply; false (nothing written) when the key is not a sorted set, for decide to read it.
local function decide_one_log(reply, at, key, now_ms, member, max_skew_ms, window_ms, limit)
  local now_text = digits(now_ms)
  local later = protected_call('ZCOUNT', key, '(' .. now_text, '+inf')
  if type(later) == 'table' then
    return not is_wrong_type(later) and error(later.err)
  end
  local cutoff_text = digits(now_ms - window_ms)
  call('ZREMRANGEBYSCORE', key, '-inf', cutoff_text)
  local count = call('ZCARD', key)
  local ahead = later > 0 and newest_score(key) or nil
  local retried = nil
  if ahead and ahead - now_ms > max_skew_ms then
    retried = call('ZSCORE', key, member) ~= false
    if not retried then
      return clock_skew(now_ms, ahead, key, max_skew_ms)
    end
  end
  local room, allowed = count < limit, 0
  if room then
    allowed = 1
    if call('ZADD', key, 'NX', now_text, member) == 1 then
      ahead = ahead or now_ms
      call('PEXPIRE', key, digits(ceil(ahead + window_ms - now_ms)))
      count = count + 1
    end
  elseif retried or retried == nil and call('ZSCORE', key, member) ~= false then
    allowed = 1
  end
  local retry_after_ms, reset_ms = 0, count > 0 and ceil((ahead or newest_score(key)) + window_ms - now_ms) or 0
  if allowed == 0 then
    retry_after_ms = until_entry_leaves(key, cutoff_text, window_ms, now_ms, count - limit)
  end
  reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] = allowed, room and 1 or 0, count, max(limit - count, 0)
  reply[at + 5], reply[at + 6], reply[at + 7], reply[at + 8] = retry_after_ms, reset_ms, limit, 0
  return nil
end
