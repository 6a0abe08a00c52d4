--[[
  replies: append_limit(reply, at, lim, allowed, now_ms, cost) writes a decided limit's seven integers
  (the library's header) into reply[at + 1 .. at + 7].
]]

-- The sub-window whose leaving lets the cost fit (the oldest leave first).
local function leaving_index(key, state, limit, cost)
  local left = state.count
  if state.counts then
    sort(state.indexes)
    for _, index in ipairs(state.indexes) do
      left = left - state.counts[index]
      if left + cost <= limit then
        return index
      end
    end
    return state.newest
  end
  -- The oldest alone first: it is usually held (see oldest_held) and enough.
  return scan_held(key, state.oldest, state.newest, 1, function(count)
    left = left - count
    return left + cost <= limit
  end) or state.newest
end

local function append_limit(reply, at, lim, allowed, now_ms, cost)
  if lim.kind == EXEMPT then
    reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = 1, 0, lim.effective, 0, 0
  elseif lim.kind == BLOCK then
    reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = 0, 0, 0, until_override_ends(lim), 0
  else
    local state, limit = lim.state, lim.effective
    local count = state.count
    local retry_after_ms, reset_ms = 0, 0
    if not lim.room and (lim.shadow or allowed == 0) then
      if cost > limit then
        retry_after_ms = until_override_ends(lim)
      elseif state.precision_ms then
        retry_after_ms = until_bucket_leaves(leaving_index(lim.key, state, limit, cost), now_ms, lim.window_ms,
                                             state.precision_ms)
      else
        retry_after_ms = until_entry_leaves(lim.key, state.cutoff_text, lim.window_ms, now_ms,
                                            count + cost - limit - 1)
      end
    end
    if count > 0 then
      if state.precision_ms then
        reset_ms = until_bucket_leaves(state.newest, now_ms, lim.window_ms, state.precision_ms)
      else
        reset_ms = ceil((state.ahead or newest_score(lim.key)) + lim.window_ms - now_ms)
      end
    end
    reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] =
      lim.room and 1 or 0, count, max(limit - count, 0), retry_after_ms, reset_ms
  end
  reply[at + 6], reply[at + 7] = lim.effective, lim.kind
end
