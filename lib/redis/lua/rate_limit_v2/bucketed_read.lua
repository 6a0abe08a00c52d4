--[[
  bucketed_read: a bucketed key read for a decision. The key is a hash of counts per sub-window
  (field <index> = floor(time_ms / precision_ms)) and of fields p (its precision_ms, kept until it
  expires), t, o and n (its total, oldest and newest sub-window: a decision reads these, not every
  sub-window) and ids (recent_ids). A sub-window counts until window_ms after its last millisecond.
  The state of a key: {count, oldest, newest, ids, precision_ms, gone: the names of sub-windows that
  left (deleted when a request is recorded), counts and indexes: per sub-window, when read whole;
  rewrite: re-bucketed; ahead; stored_oldest, stored_newest: o and n as read}.
    read_hash(key, now_ms, window_ms, precision_ms) -> the state, or nil when the key is a sorted set
    empty_buckets(precision_ms) -> a new key's state; add_count(state, index, count) adds to a sub-window
    until_bucket_leaves(index, now_ms, window_ms, precision_ms) -> ms until sub-window index stops counting
    scan_held(key, from, to, step, visit) -> the first held sub-window from `from` to `to` for which
                                             visit(count, name) is true
]]

local SCAN_STEP = 8 -- sub-windows per HMGET when a key's counts are read in order

local function until_bucket_leaves(index, now_ms, window_ms, precision_ms)
  return (index + 1) * precision_ms + window_ms - 1 - now_ms
end

-- A state read from the key's total (no table of counts) moves only its count, oldest and newest.
local function add_count(state, index, count)
  local counts = state.counts
  if counts then
    if counts[index] == nil then
      state.indexes[#state.indexes + 1] = index
      counts[index] = 0
    end
    counts[index] = counts[index] + count
  end
  state.count = state.count + count
  state.newest = (state.newest == nil or index > state.newest) and index or state.newest
  state.oldest = (state.oldest == nil or index < state.oldest) and index or state.oldest
end

-- Only the fields in use are made: each costs a table insertion.
local function empty_buckets(precision_ms)
  return { count = 0, ids = '', precision_ms = precision_ms, counts = {}, indexes = {}, oldest = nil,
           newest = nil, rewrite = false, gone = nil, ahead = nil }
end

-- A key's own precision, unless finer than the window allows (more than 1000 sub-windows): then the
-- limit's, or the finest the window allows for a log limit. Never finer than the key's: no lock-out.
local function counted_precision(stored_ms, window_ms, precision_ms)
  return stored_ms * MAX_SUB_WINDOWS >= window_ms and stored_ms
    or max(precision_ms, ceil(window_ms / MAX_SUB_WINDOWS))
end

-- A hash read whole (HGETALL) into `precision_ms`. A hash of another precision is re-bucketed, each
-- count into the sub-window holding its old one's last millisecond (or now), so that it counts at
-- least as long as before; the key is rewritten when a request is recorded.
local function read_buckets(fields, now_ms, window_ms, precision_ms, stored_ms)
  local first = floor((now_ms - window_ms + 1) / stored_ms)
  local state = empty_buckets(precision_ms)
  state.rewrite = stored_ms ~= precision_ms
  for i = 1, #fields, 2 do
    local name = fields[i]
    if name == 'ids' then
      state.ids = fields[i + 1]
    elseif name ~= 'p' then
      local index = tonumber(name)
      if index == nil then
        -- Not a field of ours: left alone.
      elseif index < first then
        state.gone = state.gone or {}
        state.gone[#state.gone + 1] = name
      elseif state.rewrite then
        add_count(state, floor(min((index + 1) * stored_ms - 1, now_ms) / precision_ms), tonumber(fields[i + 1]))
      else
        add_count(state, index, tonumber(fields[i + 1]))
      end
    end
  end
  return state
end

-- Read `step` sub-windows by the first HMGET, SCAN_STEP by the next.
local function scan_held(key, from, to, step, visit)
  local index = from
  while index <= to do
    local names = {}
    for i = index, min(index + step - 1, to) do
      names[#names + 1] = digits(i)
    end
    local counts = call('HMGET', key, unpack(names))
    for k = 1, #counts do
      if counts[k] and visit(tonumber(counts[k]), names[k]) then
        return index + k - 1
      end
    end
    index, step = index + #names, SCAN_STEP
  end
  return nil
end

-- The oldest sub-windows of a state read from t, o and n left the window (before `first`).
local function expire_sub_windows(key, state, first)
  local index, last_gone = state.oldest, min(first - 1, state.newest)
  if index == last_gone then
    -- Under steady traffic one sub-window leaves at a time: read it without the tables.
    local name = digits(index)
    local count = tonumber(call('HGET', key, name))
    if count then
      state.count = state.count - count
      state.gone = { name }
    end
  else
    scan_held(key, index, last_gone, SCAN_STEP, function(count, name)
      state.gone = state.gone or {}
      state.count, state.gone[#state.gone + 1] = state.count - count, name
    end)
  end
  if state.count > 0 then
    state.oldest = first
  else
    state.count, state.oldest, state.newest, state.ids = 0, nil, nil, ''
  end
end

local function read_hash(key, now_ms, window_ms, precision_ms)
  local meta = protected_call('HMGET', key, 't', 'o', 'n', 'p', 'ids')
  if meta.err then
    return not is_wrong_type(meta) and error(meta.err) or nil
  end
  local total, oldest, newest, stored_ms = tonumber(meta[1]), tonumber(meta[2]), tonumber(meta[3]), number_of(meta[4])
  if not (total or oldest or newest or stored_ms or meta[5]) then
    -- Nothing of ours: a new key.
    return empty_buckets(precision_ms > 0 and precision_ms or ceil(window_ms / MAX_SUB_WINDOWS))
  end
  if total and oldest and newest and stored_ms and stored_ms * MAX_SUB_WINDOWS >= window_ms then
    local state = { count = total, oldest = oldest, newest = newest, ids = meta[5] or '', precision_ms = stored_ms,
                    stored_oldest = oldest, stored_newest = newest, gone = nil }
    local first = floor((now_ms - window_ms + 1) / stored_ms)
    if oldest < first then
      expire_sub_windows(key, state, first)
    end
    return state
  end
  local fields = call('HGETALL', key)
  stored_ms = stored_ms or (precision_ms > 0 and precision_ms or 1)
  return read_buckets(fields, now_ms, window_ms, counted_precision(stored_ms, window_ms, precision_ms), stored_ms)
end
