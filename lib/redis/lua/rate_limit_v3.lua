#!lua name=rate_limit_v3
--[[
  rate_limit_v3: rate_limit_v2 plus a cost per request and, per limit, a choice of window:

  - the sliding window LOG of v1 and v2 (precision_ms = 0): one sorted set per key, score = time
    in ms, member = request id. A request of cost c is c entries (its id, then id#2 .. id#c), so
    v2 reads a key written by v3 unchanged, in cost units, and v3 reads v2's keys as they are: a
    canary v2 -> v3 or a rollback keeps every key's history. Memory grows with the limit.
  - a BUCKETED sliding window (precision_ms > 0): one hash per key, one field per sub-window of
    precision_ms (field = floor(time / precision_ms), value = cost admitted in it) and a field
    "ids" with the ids of the last 8 requests. A sub-window that still overlaps the window counts
    in full, so in every interval of window_ms at most limit is admitted, exactly as the log
    promises; the price is rejecting what a log would admit in the last sub-window. It never
    rejects what a log of window_ms + precision_ms would admit. Memory is bounded by the number of
    sub-windows (window_ms / precision_ms, at most 1000), whatever the limit.

  FCALL sliding_allow_v3 <n> <key_1> .. <key_n> <now_ms> <member> <max_skew_ms> <cost>
                            <window_ms_1> <limit_1> <precision_ms_1> .. (n triples)

    KEYS[i]          limit i's key: a sorted set (log) or a hash (bucketed); all n keys must hash
                     to one cluster slot
    ARGV[1]          now_ms          the caller's time in ms (0 to 1e15), or "*" for the server's clock
    ARGV[2]          member          unique id of this request (not empty, no space)
    ARGV[3]          max_skew_ms     how far now_ms may lag behind a key's newest entry, 0 to 1e15 ms
    ARGV[4]          cost            what this request weighs, a whole number from 1 to every limit
                                     (and at most 10,000 where a limit is a log)
    ARGV[2+3i]       window_ms_i     window length of limit i, ms > 0 and <= 1e15 (a whole number
                                     when bucketed)
    ARGV[3+3i]       limit_i         cost allowed per window by limit i, a whole number > 0
    ARGV[4+3i]       precision_ms_i  0 for the log; else the sub-window length in ms, a whole number
                                     from 1 to window_ms_i with window_ms_i / precision_ms_i <= 1000

  The request is recorded in every key only if every limit has room for its cost; a request
  rejected by one limit consumes nothing in any. A member already recorded under KEYS[1] (a retry
  of a call whose reply was lost) is answered as allowed again without recording anything: a
  retried request never counts twice (in a bucketed key, if it is among the key's last 8 requests;
  an older retry counts twice, which rejects more, never admits more).

  Reply (integers): {allowed, count_1, remaining_1, retry_after_ms_1, reset_ms_1, ..}
    allowed           1 recorded, 0 rejected (nothing recorded)
    count_i           cost counted in window i, this request's included when allowed
    remaining_i       cost limit i can still take
    retry_after_ms_i  0 when allowed, and for a limit with room for the cost; otherwise ms until
                      enough leaves window i for the cost to fit (bucketed: when a whole
                      sub-window leaves; never earlier than the request would be admitted)
    reset_ms_i        ms until window i counts nothing again (0 when it counts nothing)

  FCALL_RO sliding_peek_v3 <n> <key_1> .. <key_n> <now_ms> <cost> <window_ms_1> <limit_1>
                           <precision_ms_1> ..
    Records nothing and writes nothing (flag no-writes: runs on a replica). The reply has the
    same shape; allowed says whether a sliding_allow_v3 of this cost would be admitted now.

  FCALL sliding_allow_many_v3 <n> <key_1> .. <key_n> <max_skew_ms> <decisions>
    decisions = a JSON array, the decisions one after the other, flat:
      [<now_ms>, "<member>", <cost>, <k>, <window_ms_1>, <limit_1>, <precision_ms_1>, .., <now_ms>, ..]
    Several independent requests in one call, decided one after the other exactly as
    sliding_allow_v3 would (see rate_limit_v2.lua for why one JSON argument). Reply: the
    sliding_allow_v3 replies, concatenated. If any decision's arguments are invalid, nothing is
    written; a CLOCKSKEW of decision j is the reply of the whole call, and decisions 1 .. j-1 stay
    recorded (the caller retries them with the same members, which cannot count twice).

  Errors, before the decision writes anything:
    "ERR invalid arguments"  a missing or non-numeric argument, a window, limit, precision or cost
                             out of range, a cost above a limit, a missing member or one with a
                             space, a repeated key; in a batch also decisions that are not a JSON
                             array of values of the types above
    "CLOCKSKEW ..."          now_ms is more than max_skew_ms behind a key's newest entry (bucketed:
                             the start of its newest sub-window)
  Every key written gets a TTL that lasts until its newest entry (sub-window) leaves the window.

  A limit whose window changed (precision_ms added, removed or changed) goes on counting its keys
  safely, by what each key holds: a sorted set read for a bucketed limit becomes a hash of the
  entries' counts per sub-window (exact); a hash read for a log limit is counted as a bucketed window
  of its own precision (field "p") until it expires; a hash of another precision is re-bucketed, each
  count moved to the new sub-window holding its old sub-window's last millisecond (or now, if
  sooner), so nothing is counted for less time than before. Peek writes nothing and counts a key as
  it is.
]]

-- Bounds as in rate_limit_v2.lua: no TTL computed from them can overflow or print in exponent form.
local MAX_WINDOW_MS   = 1e15
local MAX_TIME_MS     = 1e15
local MAX_SUB_WINDOWS = 1000
local MAX_LIMIT       = 1e15
local MAX_LOG_COST    = 10000
-- Request ids a bucketed key remembers, to recognise a retry: at most RECENT_IDS, newest first, and
-- only as many as fit in RECENT_IDS_BYTES, since Redis keeps a small hash in its compact listpack
-- encoding only while every value is at most 64 bytes (hash-max-listpack-value): past it the key
-- would cost several times the memory.
local RECENT_IDS       = 8
local RECENT_IDS_BYTES = 64
-- ZADD arguments per call when a costly request adds many entries: well under Lua's stack limit.
local ZADD_CHUNK      = 1000

local function is_time(n)
  return n ~= nil and n >= 0 and n <= MAX_TIME_MS
end

local function is_whole(n)
  return n % 1 == 0
end

local function invalid_arguments()
  return redis.error_reply('ERR invalid arguments')
end

local function resolve_now(arg)
  if arg == '*' then
    local time = redis.call('TIME')
    return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  local now_ms = tonumber(arg)
  if is_time(now_ms) then
    return now_ms
  end
  return nil
end

-- Whether (window_ms, limit, precision_ms) is a valid limit for a request of `cost`.
local function is_valid_limit(window_ms, limit, precision_ms, cost)
  if window_ms == nil or limit == nil or precision_ms == nil then
    return false
  end
  -- Limits (so counts and totals) stay below 1e17, which Redis would receive as "1e+17": not an integer.
  if not (window_ms > 0 and window_ms <= MAX_WINDOW_MS and limit > 0 and limit <= MAX_LIMIT and is_whole(limit)
    and cost <= limit) then
    return false
  end
  if precision_ms == 0 then
    -- A log writes one entry per unit of cost, all in this call: bound the call's work.
    return cost <= MAX_LOG_COST
  end
  return precision_ms >= 1 and is_whole(precision_ms) and is_whole(window_ms) and precision_ms <= window_ms
    and window_ms / precision_ms <= MAX_SUB_WINDOWS
end

local function is_valid_cost(cost)
  return cost ~= nil and cost >= 1 and is_whole(cost) and cost <= MAX_TIME_MS
end

-- No whitespace (a bucketed key keeps ids space-separated) and no '#' (a log key's cost entries are
-- <member>#2 .. <member>#c: a member containing one could be taken for another's entry).
local function is_valid_member(member)
  return type(member) == 'string' and member ~= '' and not string.find(member, '[%s#]')
end

-- Reads n (window_ms, limit, precision_ms) triples starting at args[first]; nil when one is invalid.
local function parse_limits(args, first, n, cost)
  local windows, limits, precisions = {}, {}, {}
  for i = 1, n do
    local at = first + 3 * (i - 1)
    local window_ms, limit, precision_ms = tonumber(args[at]), tonumber(args[at + 1]), tonumber(args[at + 2])
    if not is_valid_limit(window_ms, limit, precision_ms, cost) then
      return nil
    end
    windows[i], limits[i], precisions[i] = window_ms, limit, precision_ms
  end
  return windows, limits, precisions
end

local function has_repeated_key(keys, first, last)
  local seen = {}
  for i = first, last do
    if seen[keys[i]] then
      return true
    end
    seen[keys[i]] = true
  end
  return false
end

local function format_number(n)
  return string.format('%.17g', n)
end

local function clock_skew(now_ms, newest, key, max_skew_ms)
  return redis.error_reply(string.format(
    'CLOCKSKEW now_ms %d is %d ms behind the newest entry of %s (tolerance %d ms)',
    now_ms, newest - now_ms, key, max_skew_ms))
end

---------------------------------------------------------------------------------------------- log

local function newest_score(key)
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return tonumber(newest[2])
end

-- Whether a redis.pcall reply is the error of a key holding the other kind of value.
local function is_wrong_type(reply)
  return type(reply) == 'table' and reply.err ~= nil and string.sub(reply.err, 1, 9) == 'WRONGTYPE'
end

-- The newest score when an entry lies after now_ms (another caller's clock runs ahead), else nil;
-- false when the key is a hash (a bucketed window's).
local function newest_after(key, now_ms)
  local later = redis.pcall('ZCOUNT', key, '(' .. format_number(now_ms), '+inf')
  if is_wrong_type(later) then
    return false
  end
  if type(later) == 'table' then
    return error(later.err)
  end
  if later == 0 then
    return nil
  end
  return newest_score(key)
end

-- ms until the in-window entry at position `offset` (0 = oldest) leaves the window.
local function until_entry_leaves(key, now_ms, window_ms, offset)
  local entry = redis.call('ZRANGEBYSCORE', key, '(' .. format_number(now_ms - window_ms), '+inf',
                           'WITHSCORES', 'LIMIT', offset, 1)
  return math.ceil(tonumber(entry[2]) + window_ms - now_ms)
end

-- Adds the cost - 1 entries that follow a request's first one (id#2 .. id#cost).
local function add_extra_entries(key, now_text, member, cost)
  local k = 2
  while k <= cost do
    local args = {}
    local last = math.min(cost, k + ZADD_CHUNK - 1)
    for j = k, last do
      args[#args + 1] = now_text
      args[#args + 1] = member .. '#' .. j
    end
    redis.call('ZADD', key, unpack(args))
    k = last + 1
  end
end

-- A log key read for a decision: drops what left the window. Returns count and the newest score
-- when it lies after now_ms (nil otherwise); nil alone when the key is a hash.
local function read_log(key, now_ms, window_ms, writes)
  local newest = newest_after(key, now_ms)
  if newest == false then
    return nil
  end
  if writes then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', format_number(now_ms - window_ms))
    return redis.call('ZCARD', key), newest
  end
  return redis.call('ZCOUNT', key, '(' .. format_number(now_ms - window_ms), '+inf'), newest
end

local function log_recorded(key, member)
  return redis.call('ZSCORE', key, member) ~= false
end

-- Records a request of `cost` in a log key; returns the cost added (0 for a retry already recorded).
local function record_log(key, now_ms, window_ms, member, cost, newest)
  local now_text = format_number(now_ms)
  if redis.call('ZADD', key, 'NX', now_text, member) == 0 then
    return 0
  end
  add_extra_entries(key, now_text, member, cost)
  redis.call('PEXPIRE', key, math.ceil((newest or now_ms) + window_ms - now_ms))
  return cost
end

-- count, remaining, retry_after_ms and reset_ms of a log limit.
local function log_state(allowed, key, now_ms, window_ms, limit, cost, count, newest)
  local retry_after_ms = 0
  if allowed == 0 and count + cost > limit then
    -- count + cost - limit entries must leave before the cost fits.
    retry_after_ms = until_entry_leaves(key, now_ms, window_ms, count + cost - limit - 1)
  end
  local reset_ms = 0
  if count > 0 then
    reset_ms = math.ceil((newest or newest_score(key)) + window_ms - now_ms)
  end
  return count, math.max(limit - count, 0), retry_after_ms, reset_ms
end

----------------------------------------------------------------------------------------- bucketed

-- The sub-window length a hash was written with (its field "p"), or `default_ms`.
local function stored_precision(fields, default_ms)
  for i = 1, #fields, 2 do
    if fields[i] == 'p' then
      return tonumber(fields[i + 1]) or default_ms
    end
  end
  return default_ms
end

-- ms from now_ms until sub-window `index` (of `precision_ms`) stops counting.
local function until_bucket_leaves(index, now_ms, window_ms, precision_ms)
  -- Rounded up: a fractional now_ms (a caller's clock) must not make a TTL Redis refuses, or a
  -- retry time the integer reply would truncate to one a millisecond early.
  return math.ceil((index + 1) * precision_ms + window_ms - 1 - now_ms)
end

-- Writes a bucketed key whole: its counts by sub-window, ids and precision, with its TTL.
local function write_buckets(key, state, now_ms, window_ms)
  redis.call('DEL', key)
  if state.newest == nil then
    return
  end
  local args = {}
  for _, index in ipairs(state.indexes) do
    args[#args + 1] = string.format('%d', index)
    args[#args + 1] = state.counts[index]
  end
  args[#args + 1] = 'ids'
  args[#args + 1] = state.ids
  args[#args + 1] = 'p'
  args[#args + 1] = state.precision
  args[#args + 1] = 't'
  args[#args + 1] = state.total
  args[#args + 1] = 'o'
  args[#args + 1] = state.oldest
  args[#args + 1] = 'n'
  args[#args + 1] = state.newest
  redis.call('HSET', key, unpack(args))
  redis.call('PEXPIRE', key, until_bucket_leaves(state.newest, now_ms, window_ms, state.precision))
end

-- Adds `count` to sub-window `index`. A state read by the fast path (see read_limit) has no table of
-- counts: only its total, oldest and newest move.
local function add_count(state, index, count)
  if state.counts ~= nil then
    if state.counts[index] == nil then
      state.indexes[#state.indexes + 1] = index
      state.counts[index] = 0
    end
    state.counts[index] = state.counts[index] + count
  end
  state.total = state.total + count
  if state.newest == nil or index > state.newest then
    state.newest = index
  end
  if state.oldest == nil or index < state.oldest then
    state.oldest = index
  end
end

-- A bucketed key read for a decision, from its HGETALL `fields`. Returns a state table: total (cost
-- counted), indexes and counts of the sub-windows still counted, newest (the highest sub-window
-- index, or nil), ids and precision. With `writes`, the sub-windows that left the window are deleted.
-- A key written with another precision (the limit's precisionMs changed) is re-bucketed: each old
-- sub-window's count moves to the new sub-window holding its last millisecond, or now if that is
-- sooner, so it counts at least as long as it did (never an over-admission, and never a time ahead
-- of now, which the clock-skew check would refuse).
local function read_buckets(key, now_ms, window_ms, precision_ms, writes, fields)
  local precision = stored_precision(fields, precision_ms)
  local first = math.floor((now_ms - window_ms + 1) / precision)
  local state = { total = 0, indexes = {}, counts = {}, newest = nil, ids = '', precision = precision_ms }
  local expired = {}
  local moved = precision ~= precision_ms
  for i = 1, #fields, 2 do
    local name = fields[i]
    if name == 'ids' then
      state.ids = fields[i + 1]
    elseif name ~= 'p' then
      local index = tonumber(name)
      if index == nil then
        -- Not a field of ours: ignored, and left alone.
      elseif index < first then
        expired[#expired + 1] = name
      elseif moved then
        local last_ms = math.min((index + 1) * precision - 1, now_ms)
        add_count(state, math.floor(last_ms / precision_ms), tonumber(fields[i + 1]))
      else
        add_count(state, index, tonumber(fields[i + 1]))
      end
    end
  end
  if writes and moved then
    write_buckets(key, state, now_ms, window_ms)
  elseif writes and #expired > 0 then
    redis.call('HDEL', key, unpack(expired))
    state.unsaved = true
  end
  return state
end

-- A log key (sorted set) read for a bucketed limit: each entry in the window counted in the
-- sub-window of its time (exact), the key rewritten as a hash with `writes`. The newest request ids
-- (entries without a #n suffix) are kept to recognise retries.
local function read_log_as_buckets(key, now_ms, window_ms, precision_ms, writes)
  local entries = redis.call('ZRANGEBYSCORE', key, '(' .. format_number(now_ms - window_ms), '+inf', 'WITHSCORES')
  local state = { total = 0, indexes = {}, counts = {}, newest = nil, ids = '', precision = precision_ms }
  local ids, length = {}, -1
  for i = #entries - 1, 1, -2 do
    add_count(state, math.floor(tonumber(entries[i + 1]) / precision_ms), 1)
    local id = entries[i]
    if not string.find(id, '#', 1, true) and #ids < RECENT_IDS and length + 1 + #id <= RECENT_IDS_BYTES then
      ids[#ids + 1] = id
      length = length + 1 + #id
    end
  end
  state.ids = table.concat(ids, ' ')
  if writes then
    write_buckets(key, state, now_ms, window_ms)
  end
  return state
end

-- The start of a bucketed key's newest sub-window when it lies after now_ms (another caller's
-- clock runs ahead), else nil.
local function newest_start(state, now_ms)
  if state.newest ~= nil and state.newest * state.precision > now_ms then
    return state.newest * state.precision
  end
  return nil
end

local function bucket_recorded(state, member)
  -- Searched in place (no ' ' .. ids .. ' ' copies): a match must be a whole id, between spaces.
  local ids = state.ids
  local at = string.find(ids, member, 1, true)
  while at do
    local after = at + #member
    if (at == 1 or string.byte(ids, at - 1) == 32) and (after > #ids or string.byte(ids, after) == 32) then
      return true
    end
    at = string.find(ids, member, at + 1, true)
  end
  return false
end

-- Records a request of `cost` in a bucketed key (not a retry: the caller checked).
local function record_bucket(key, state, now_ms, window_ms, member, cost)
  local index = math.floor(now_ms / state.precision)
  local name = string.format('%d', index) -- not '%.0f': see the HSET's integers below
  -- The sub-window's new count goes in the HSET below when it is known: from a state's table of
  -- counts, or because the sub-window is newer than every one the key holds (no field yet: the
  -- request's cost). Only a fast-path state adding to a sub-window it holds needs an HINCRBY.
  local count_text
  if state.counts == nil and state.newest ~= nil and index <= state.newest then
    redis.call('HINCRBY', key, name, cost)
    add_count(state, index, cost)
  else
    add_count(state, index, cost)
    count_text = string.format('%d', state.counts and state.counts[index] or cost)
  end
  -- The newest ids first; the oldest fall off past RECENT_IDS or RECENT_IDS_BYTES. The ids kept
  -- behind the new one are a prefix of the old list (space-separated, no other whitespace): found
  -- with plain string.find, not split into strings and joined again, which costs several times more.
  local old = state.ids
  local budget = RECENT_IDS_BYTES - #member - 1 -- bytes the kept prefix may take
  local cut, from = 0, 1
  for _ = 2, RECENT_IDS do
    local space = string.find(old, ' ', from, true)
    local stop = space and space - 1 or #old
    if stop < from or stop > budget then
      break
    end
    cut = stop
    if not space then
      break
    end
    from = space + 1
  end
  if cut > 0 then
    state.ids = member .. ' ' .. string.sub(old, 1, cut)
  else
    state.ids = member
  end
  -- The total, a bound below every sub-window (o) and the newest (n) let the next decision skip
  -- reading every sub-window (read_limit's fast path). Written as they change: a key read by the fast
  -- path knows what it holds (state.stored); any other gets them all, with its precision.
  -- Integers go as string.format('%d') text: Redis would print a Lua number with '%.17g', the same
  -- digits below 1e17 (every value here) at several times the cost.
  local total_text = string.format('%d', state.total)
  local args -- built whole by one constructor: appending would grow the table step by step
  if count_text then
    args = { name, count_text, 'ids', state.ids, 't', total_text }
  else
    args = { 'ids', state.ids, 't', total_text }
  end
  local stored = state.stored
  if stored == nil or stored.o ~= state.oldest then
    args[#args + 1], args[#args + 2] = 'o', string.format('%d', state.oldest)
  end
  if stored == nil or stored.n ~= state.newest then
    args[#args + 1], args[#args + 2] = 'n', string.format('%d', state.newest)
  end
  if stored == nil then
    args[#args + 1], args[#args + 2] = 'p', state.precision
  end
  redis.call('HSET', key, unpack(args))
  state.unsaved = false
  local ttl = until_bucket_leaves(state.newest, now_ms, window_ms, state.precision)
  redis.call('PEXPIRE', key, string.format('%d', ttl))
end

-- Sub-windows read per HMGET when a fast-path state looks for its retry time.
local RETRY_SCAN_STEP = 8

-- The index of the sub-window whose leaving lets `cost` fit, for a state read by the fast path (no
-- table of counts; every sub-window from its oldest to its newest still counts): the sub-windows are
-- read oldest first, a few per HMGET, and usually the first few are enough.
local function leaving_index_scanned(key, state, limit, cost)
  local left = state.total
  local index = state.oldest
  while index <= state.newest do
    local last = math.min(index + RETRY_SCAN_STEP - 1, state.newest)
    local names = {}
    for at = index, last do
      names[#names + 1] = string.format('%d', at)
    end
    local values = redis.call('HMGET', key, unpack(names))
    for k = 1, #values do
      local count = tonumber(values[k])
      if count ~= nil then
        left = left - count
        if left + cost <= limit then
          return index + k - 1
        end
      end
    end
    index = last + 1
  end
  return state.newest
end

-- The same from a state's table of counts: the oldest sub-windows leave first.
local function leaving_index(state, limit, cost)
  table.sort(state.indexes)
  local left = state.total
  for _, index in ipairs(state.indexes) do
    left = left - state.counts[index]
    if left + cost <= limit then
      return index
    end
  end
  return state.newest
end

-- count, remaining, retry_after_ms and reset_ms of a bucketed limit.
local function bucket_state(allowed, key, state, now_ms, window_ms, limit, cost)
  local precision_ms = state.precision
  local count = state.total
  local retry_after_ms = 0
  if allowed == 0 and count + cost > limit then
    local index
    if state.counts == nil then
      index = leaving_index_scanned(key, state, limit, cost)
    else
      index = leaving_index(state, limit, cost)
    end
    retry_after_ms = until_bucket_leaves(index, now_ms, window_ms, precision_ms)
  end
  local reset_ms = 0
  if count > 0 then
    reset_ms = until_bucket_leaves(state.newest, now_ms, window_ms, precision_ms)
  end
  return count, math.max(limit - count, 0), retry_after_ms, reset_ms
end

------------------------------------------------------------------------------------------ decisions

-- The names of sub-windows `from` .. `to` and their values, by one HMGET.
local function sub_windows(key, from, to)
  local names = {}
  for at = from, to do
    names[#names + 1] = string.format('%d', at)
  end
  return names, redis.call('HMGET', key, unpack(names))
end

-- A fast-path state whose oldest sub-windows have left the window (before `first`): reads and
-- deletes just those, a few per HMGET, instead of every sub-window. `first` becomes the key's bound
-- below every sub-window (o need not be a sub-window that exists, only no older one may). The total
-- and bound are written by the record, or at the end of the decision (save_meta).
local function expire_scanned(key, state, first, writes)
  local gone = {}
  local index = state.oldest
  local last_gone = math.min(first - 1, state.newest)
  if index == last_gone then
    -- Under steady traffic one sub-window leaves at a time: read and delete it without the tables.
    local name = string.format('%d', index)
    local count = tonumber(redis.call('HGET', key, name))
    if count ~= nil then
      state.total = state.total - count
      gone[1] = name
    end
    index = last_gone + 1
  end
  while index <= last_gone do
    local upto = math.min(index + RETRY_SCAN_STEP - 1, last_gone)
    local names, values = sub_windows(key, index, upto)
    for k = 1, #values do
      local count = tonumber(values[k])
      if count ~= nil then
        state.total = state.total - count
        gone[#gone + 1] = names[k]
      end
    end
    index = upto + 1
  end
  if state.total > 0 then
    state.oldest = first
  else
    state.total, state.oldest, state.newest, state.ids = 0, nil, nil, ''
  end
  if writes and #gone > 0 then
    redis.call('HDEL', key, unpack(gone))
    state.unsaved = true
  end
end

-- Writes what a decision changed of a bucketed key that it did not record in: its total and bound
-- after sub-windows left (or deletes a key left with none), so that they always match its counts.
local function save_meta(key, state)
  if not state.unsaved then
    return
  end
  if state.newest == nil then
    redis.call('DEL', key)
  else
    redis.call('HSET', key, 't', state.total, 'o', state.oldest, 'n', state.newest)
  end
  state.unsaved = false
end

-- A limit's key read for a decision, counted by what the key holds, so that a limit whose
-- precisionMs changed (or was added or removed) goes on counting its existing keys safely:
--   * a log limit on a hash (a bucketed key) counts it as a bucketed window of the hash's own
--     precision until it expires (turning counts back into entries could take a limit's worth of
--     writes);
--   * a bucketed limit on a sorted set (a log key) turns its entries into counts per sub-window,
--     each in the sub-window of its time (exact); peek, which writes nothing, counts it as a log;
--   * a hash of another precision is re-bucketed (read_buckets).
-- Returns the precision the key is counted with (0: a log), the count, the newest time after now_ms
-- (a log's newest entry, a bucketed key's newest sub-window start; nil when none lies after now_ms)
-- and, for a bucketed key, its state.
local function read_limit(key, now_ms, window_ms, precision_ms, writes)
  if precision_ms == 0 then
    local count, newest = read_log(key, now_ms, window_ms, writes)
    if count ~= nil then
      return 0, count, newest
    end
    local fields = redis.call('HGETALL', key)
    -- Its own precision, unless that is finer than this window allows: then re-bucketed coarser.
    precision_ms = math.max(stored_precision(fields, 1), math.ceil(window_ms / MAX_SUB_WINDOWS))
    local state = read_buckets(key, now_ms, window_ms, precision_ms, writes, fields)
    return precision_ms, state.total, newest_start(state, now_ms), state
  end
  -- The fast path: while no sub-window has left the window since the key's total was written
  -- (its oldest sub-window still counts), the total is the count, without reading every sub-window.
  -- When sub-windows have left since, only those are read and deleted (expire_scanned).
  local meta = redis.pcall('HMGET', key, 't', 'o', 'n', 'p', 'ids')
  if not is_wrong_type(meta) then
    local total, oldest, newest = tonumber(meta[1]), tonumber(meta[2]), tonumber(meta[3])
    if total and oldest and newest and tonumber(meta[4]) == precision_ms then
      local state = { total = total, oldest = oldest, newest = newest, ids = meta[5] or '', precision = precision_ms,
                      stored = { o = oldest, n = newest } }
      local first = math.floor((now_ms - window_ms + 1) / precision_ms)
      if oldest < first then
        expire_scanned(key, state, first, writes)
      end
      return precision_ms, state.total, newest_start(state, now_ms), state
    end
  end
  local fields = redis.pcall('HGETALL', key)
  local state
  if is_wrong_type(fields) then
    if not writes then
      local count, newest = read_log(key, now_ms, window_ms, false)
      return 0, count, newest
    end
    state = read_log_as_buckets(key, now_ms, window_ms, precision_ms, writes)
  elseif type(fields) == 'table' and fields.err then
    return error(fields.err)
  else
    state = read_buckets(key, now_ms, window_ms, precision_ms, writes, fields)
  end
  return precision_ms, state.total, newest_start(state, now_ms), state
end

-- Appends a decision's reply: allowed, then count, remaining, retry_after_ms and reset_ms per limit.
local function append_decision(reply, allowed, keys, kinds, counts, newest, states, now_ms, windows, limits, cost)
  reply[#reply + 1] = allowed
  for i = 1, #keys do
    local at = #reply
    if kinds[i] == 0 then
      reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] =
        log_state(allowed, keys[i], now_ms, windows[i], limits[i], cost, counts[i], newest[i])
    else
      reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] =
        bucket_state(allowed, keys[i], states[i], now_ms, windows[i], limits[i], cost)
    end
  end
end

-- One request against n limits, all or none recorded. Appends its reply to `reply`; returns an
-- error reply instead when the clock is skewed.
local function decide(reply, keys, now_ms, member, max_skew_ms, cost, windows, limits, precisions)
  local n = #keys
  -- Per limit: the precision its key is counted with (0: a log), its count and newest time after
  -- now_ms, and a bucketed key's state.
  local kinds, counts, newest, states = {}, {}, {}, {}
  local retried = nil
  local function is_retry()
    if retried == nil then
      if kinds[1] == 0 then
        retried = log_recorded(keys[1], member)
      else
        retried = bucket_recorded(states[1], member)
      end
    end
    return retried
  end

  local allowed = 1
  for i = 1, n do
    kinds[i], counts[i], newest[i], states[i] = read_limit(keys[i], now_ms, windows[i], precisions[i], true)
    -- A retry carries its original now_ms, which newer entries may have overtaken since.
    if newest[i] and newest[i] - now_ms > max_skew_ms and not is_retry() then
      -- Nothing is recorded, but sub-windows that left may have been deleted: keep the keys whole.
      for j = 1, i do
        if kinds[j] ~= 0 then
          save_meta(keys[j], states[j])
        end
      end
      return clock_skew(now_ms, newest[i], keys[i], max_skew_ms)
    end
    if counts[i] + cost > limits[i] then
      allowed = 0
    end
  end
  if allowed == 0 and is_retry() then
    allowed = 1
  end

  -- A bucketed first key tells a retry by its ids; a log first key by ZADD adding nothing (no
  -- ZSCORE on the common path). A recorded request is recorded under every key: the first tells.
  if allowed == 1 and not (kinds[1] ~= 0 and is_retry()) then
    for i = 1, n do
      if kinds[i] == 0 then
        local added = record_log(keys[i], now_ms, windows[i], member, cost, newest[i])
        if i == 1 and added == 0 then
          break
        end
        counts[i] = counts[i] + added
        newest[i] = newest[i] or now_ms
      else
        record_bucket(keys[i], states[i], now_ms, windows[i], member, cost)
        counts[i] = states[i].total
      end
    end
  end
  for i = 1, n do
    if kinds[i] ~= 0 then
      save_meta(keys[i], states[i])
    end
  end

  append_decision(reply, allowed, keys, kinds, counts, newest, states, now_ms, windows, limits, cost)
  return nil
end

local function sliding_allow(keys, args)
  local n = #keys
  if n < 1 or #args ~= 4 + 3 * n or (n > 1 and has_repeated_key(keys, 1, n)) then
    return invalid_arguments()
  end
  local now_ms      = resolve_now(args[1])
  local member      = args[2]
  local max_skew_ms = tonumber(args[3])
  local cost        = tonumber(args[4])
  if not now_ms or not is_valid_member(member) or not is_time(max_skew_ms) or not is_valid_cost(cost) then
    return invalid_arguments()
  end
  local windows, limits, precisions = parse_limits(args, 5, n, cost)
  if not windows then
    return invalid_arguments()
  end
  local reply = {}
  return decide(reply, keys, now_ms, member, max_skew_ms, cost, windows, limits, precisions) or reply
end

-- The key count of the decision at list[at] of sliding_allow_many (its decoded JSON, `size` long),
-- whose keys follow the first `taken`; nil when it is invalid. JSON values are typed: a number must
-- be a number, not a numeric string.
local function decision_key_count(keys, key_count, list, size, at, taken)
  local now_ms, member, cost, n = list[at], list[at + 1], list[at + 2], list[at + 3]
  if type(n) ~= 'number' or not (n >= 1 and is_whole(n) and taken + n <= key_count and at + 3 + 3 * n <= size) then
    return nil
  end
  if now_ms ~= '*' and (type(now_ms) ~= 'number' or not is_time(now_ms)) then
    return nil
  end
  if not is_valid_member(member) or type(cost) ~= 'number' or not is_valid_cost(cost) then
    return nil
  end
  for i = at + 4, at + 1 + 3 * n, 3 do
    local window_ms, limit, precision_ms = list[i], list[i + 1], list[i + 2]
    if type(window_ms) ~= 'number' or type(limit) ~= 'number' or type(precision_ms) ~= 'number'
      or not is_valid_limit(window_ms, limit, precision_ms, cost) then
      return nil
    end
  end
  if n > 1 and has_repeated_key(keys, taken + 1, taken + n) then
    return nil
  end
  return n
end

local function decode_decisions(text)
  local ok, list = pcall(cjson.decode, text)
  if ok and type(list) == 'table' then
    return list
  end
  return nil
end

local function sliding_allow_many(keys, args)
  local max_skew_ms = tonumber(args[1])
  local list = #args == 2 and decode_decisions(args[2])
  local key_count = #keys
  if key_count < 1 or not is_time(max_skew_ms) or not list then
    return invalid_arguments()
  end
  -- Every decision is checked before the first one writes.
  local size = #list
  local at, taken = 1, 0
  while at <= size do
    local n = decision_key_count(keys, key_count, list, size, at, taken)
    if not n then
      return invalid_arguments()
    end
    at, taken = at + 4 + 3 * n, taken + n
  end
  if taken ~= key_count then
    return invalid_arguments()
  end

  local reply = {}
  at, taken = 1, 0
  while at <= size do
    local now_ms, member, cost, n = list[at], list[at + 1], list[at + 2], list[at + 3]
    if now_ms == '*' then
      now_ms = resolve_now('*')
    end
    local own_keys, windows, limits, precisions = {}, {}, {}, {}
    for i = 1, n do
      local first = at + 1 + 3 * i
      own_keys[i], windows[i], limits[i], precisions[i] = keys[taken + i], list[first], list[first + 1], list[first + 2]
    end
    local failed = decide(reply, own_keys, now_ms, member, max_skew_ms, cost, windows, limits, precisions)
    if failed then
      return failed
    end
    at, taken = at + 4 + 3 * n, taken + n
  end
  return reply
end

local function sliding_peek(keys, args)
  local n = #keys
  if n < 1 or #args ~= 2 + 3 * n or (n > 1 and has_repeated_key(keys, 1, n)) then
    return invalid_arguments()
  end
  local now_ms = resolve_now(args[1])
  local cost = tonumber(args[2])
  if not now_ms or not is_valid_cost(cost) then
    return invalid_arguments()
  end
  local windows, limits, precisions = parse_limits(args, 3, n, cost)
  if not windows then
    return invalid_arguments()
  end

  -- Log keys are passed no newest time: log_state reads it when the window holds anything.
  local kinds, counts, states, allowed = {}, {}, {}, 1
  for i = 1, n do
    local newest_unused
    kinds[i], counts[i], newest_unused, states[i] = read_limit(keys[i], now_ms, windows[i], precisions[i], false)
    if counts[i] + cost > limits[i] then
      allowed = 0
    end
  end
  local reply = {}
  append_decision(reply, allowed, keys, kinds, counts, {}, states, now_ms, windows, limits, cost)
  return reply
end

redis.register_function('sliding_allow_v3', sliding_allow)
redis.register_function('sliding_allow_many_v3', sliding_allow_many)
redis.register_function{
  function_name = 'sliding_peek_v3',
  callback      = sliding_peek,
  flags         = {'no-writes'},
}
