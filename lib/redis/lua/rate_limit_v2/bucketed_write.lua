--[[
  bucketed_write: a request recorded in a bucketed key (layout in bucketed_read), its state then
  updated. Only a recorded request writes: a refusal rewrites nothing.
    record_buckets(key, state, now_ms, window_ms, member, cost, limit)
                                    records a request that is not a retry (the caller checked the ids);
                                    the key's TTL lasts until its newest sub-window leaves
    log_as_buckets(lim)             -> a log key's entries in the window as the state of a hash of the
                                       limit's precision (exact counts, its newest ids)
]]

-- A key re-bucketed, or a log turned into counts, is written whole.
local function write_buckets(key, state, now_ms, window_ms)
  call('DEL', key)
  local args = {}
  sort(state.indexes)
  for _, index in ipairs(state.indexes) do
    args[#args + 1] = digits(index)
    args[#args + 1] = digits(state.counts[index])
  end
  args[#args + 1], args[#args + 2] = 'ids', state.ids
  args[#args + 1], args[#args + 2] = 'p', digits(state.precision_ms)
  args[#args + 1], args[#args + 2] = 't', digits(state.count)
  args[#args + 1], args[#args + 2] = 'o', digits(state.oldest)
  args[#args + 1], args[#args + 2] = 'n', digits(state.newest)
  call('HSET', key, unpack(args))
  call('PEXPIRE', key, digits(until_bucket_leaves(state.newest, now_ms, window_ms, state.precision_ms)))
end

-- Request ids are the entries without a #n suffix.
local function log_as_buckets(lim)
  local entries = call('ZRANGEBYSCORE', lim.key, '(' .. lim.state.cutoff_text, '+inf', 'WITHSCORES')
  local state = empty_buckets(lim.precision_ms)
  local ids, length = {}, -1
  for i = #entries - 1, 1, -2 do
    add_count(state, floor(tonumber(entries[i + 1]) / lim.precision_ms), 1)
    local id = entries[i]
    if not find(id, '#', 1, true) and #ids < RECENT_IDS and length + 1 + #id <= RECENT_IDS_BYTES then
      ids[#ids + 1] = id
      length = length + 1 + #id
    end
  end
  state.ids = concat(ids, ' ')
  state.rewrite = true
  return state
end

-- scan_held's visitor that stops at the first sub-window held: one function, not one per scan.
local function any_held()
  return true
end

-- Written as the key's bound o when a request fills the key: the refusals that follow, which write
-- nothing, then read no sub-window that left before them, however long the gap after it.
local function oldest_held(key, from, last)
  return scan_held(key, from, last - 1, SCAN_STEP, any_held) or last
end

local function record_buckets(key, state, now_ms, window_ms, member, cost, limit)
  local index = floor(now_ms / state.precision_ms)
  local newest_before = state.newest
  local name = digits(index)
  local count_text
  if state.counts == nil and newest_before and index <= newest_before then
    call('HINCRBY', key, name, digits(cost))
    add_count(state, index, cost)
  else
    add_count(state, index, cost)
    count_text = digits(state.counts and state.counts[index] or cost)
  end
  state.ids = with_id(state.ids, member)
  if state.rewrite then
    return write_buckets(key, state, now_ms, window_ms)
  end
  if state.counts == nil and state.count >= limit and state.oldest < index then
    state.oldest = oldest_held(key, state.oldest, index)
  end
  if state.gone then
    call('HDEL', key, unpack(state.gone))
  end
  local total_text = digits(state.count)
  local args -- built whole by one constructor: appending would grow the table step by step
  if count_text then
    args = { name, count_text, 'ids', state.ids, 't', total_text }
  else
    args = { 'ids', state.ids, 't', total_text }
  end
  if state.stored_oldest ~= state.oldest then
    args[#args + 1], args[#args + 2] = 'o', digits(state.oldest)
  end
  if state.stored_newest ~= state.newest then
    args[#args + 1], args[#args + 2] = 'n', state.newest == index and name or digits(state.newest)
  end
  if state.stored_newest == nil then
    args[#args + 1], args[#args + 2] = 'p', digits(state.precision_ms)
  end
  call('HSET', key, unpack(args))
  -- The key's TTL lasts until its newest sub-window leaves already: only a newer one moves it.
  if newest_before == nil or index > newest_before then
    call('PEXPIRE', key, digits(until_bucket_leaves(index, now_ms, window_ms, state.precision_ms)))
  end
end
