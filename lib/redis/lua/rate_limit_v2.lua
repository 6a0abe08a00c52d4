#!lua name=rate_limit_v2
--[[
  rate_limit_v2: the sliding window of rate_limit_v1, extended. Per limit, the exact LOG (a sorted
  set, v1's layout: v1 and v2 serve the same keys side by side during a canary or a rollback) or
  the BUCKETED window of precision_ms (a hash of counts per sub-window: bounded memory); several
  limits of one request decided in one call; a cost per request; shadow limits; per-key overrides
  read in the same call; retries that never count twice; the server's clock on request.

  The promises of a bucketed key: never admits more than the limit in any window_ms; never rejects
  what a log of window_ms + the key's precision would admit; a client that waits retry_after_ms is
  admitted. A bucketed key keeps the precision it was created with (field "p") until it expires,
  so limits of several precisions on one key (a rolling deploy) never push its counts later; it is
  re-bucketed only into a coarser precision, once, when its own is too fine for a caller's window.
  A rejected request records nothing and rewrites nothing (it may only trim a log of entries that
  have left the window).

  FCALL sliding_allow_v2 <n + m> <key_1> .. <key_n> <override_key_1> .. <override_key_m>
                         <now_ms> <member> <max_skew_ms> <cost>
                         <window_ms_1> <limit_1> <precision_ms_1> <flags_1> .. (n quadruples)

    KEYS[i]            limit i's key (i <= n): a sorted set (log) or a hash (bucketed)
    KEYS[n+j]          the override key of the j-th limit whose flags include 2 (see overrides)
                       All n + m keys must hash to one cluster slot.
    ARGV[1]            now_ms          the caller's time in ms (0 to 1e15), or "*" for the server's clock
    ARGV[2]            member          unique id of this request (not empty, no whitespace, no '#')
    ARGV[3]            max_skew_ms     how far now_ms may lag behind a key's newest entry, 0 to 1e15 ms
    ARGV[4]            cost            what this request weighs, 1 to every limit (to 10,000 for a log)
    ARGV[1+4i]         window_ms_i     window of limit i, 1 to 1e15 ms
    ARGV[2+4i]         limit_i         cost allowed per window by limit i, 1 to 1e15
    ARGV[3+4i]         precision_ms_i  0 for the log; else the sub-window length, 1 to window_ms_i,
                                       with window_ms_i / precision_ms_i <= 1000
    ARGV[4+4i]         flags_i         0 enforced, 1 shadow; plus 2 when an override key follows
    Every number is whole (as Lua's tonumber reads it).

  Admission: every ENFORCED limit has room for the cost (after overrides). Enforced keys record the
  request if and only if it is admitted. A SHADOW limit never refuses: it is the experiment "this
  limit stacked on the enforced ones", so its key records the request if and only if it is
  admitted and the shadow limit has room; its outcome says whether it would have refused.
  A retry (the member is already recorded under the first enforced limit that has no exempt or
  block override: the anchor) is answered as admitted and recorded nowhere again, unless an
  enforced limit is blocked. Without an anchor, each key tells its own retries. A bucketed key
  recognises the retries among its last 8 requests; an older retry counts twice (rejects more).

  Overrides: a hash per limited key, in its slot (lib/core/override-keys.ts names it), with
  field "action" and, for "limit", field "limit"; it expires by its own TTL.
    limit   the key's limit is the override's (0 to 1e15) instead of limit_i
    exempt  the key is not limited: room always, its key neither read nor written
    block   no room: refused (a shadow limit would refuse); retry_after_ms is the override's
            remaining TTL, or window_ms_i when it has none; the key is neither read nor written
  An override whose limit is below the cost also answers with its remaining TTL.

  Reply (integers): {allowed, then 7 per limit: room_i, count_i, remaining_i, retry_after_ms_i,
                     reset_ms_i, limit_i, override_i}
    allowed           1 admitted (recorded, or a retry), 0 refused (nothing recorded)
    room_i            1 limit i had room for the cost (exempt; a shadow limit's own retry), else 0
    count_i           cost counted in window i, this request's included when recorded there
    remaining_i       cost limit i can still take
    retry_after_ms_i  0 with room, and for an enforced limit of an admitted request; otherwise ms
                      until the cost fits (bucketed: when a whole sub-window leaves; never early)
    reset_ms_i        ms until window i counts nothing again (0 when it counts nothing)
    limit_i           the effective limit: the override's, 0 when blocked, else limit_i
    override_i        0 none, 1 limit, 2 exempt, 3 block

  FCALL_RO sliding_peek_v2 <n + m> <keys and override keys as above> <now_ms> <cost> <quadruples>
    Writes nothing (flag no-writes: runs on a replica). The same reply; allowed says whether a
    sliding_allow_v2 of this cost would be admitted now (a retry is not recognised).

  FCALL sliding_allow_many_v2 <keys> <max_skew_ms> <decisions>
    decisions = a JSON array, flat: [<now_ms>, "<member>", <cost>, <k>, <window_ms_1>, <limit_1>,
      <precision_ms_1>, <flags_1>, .. (k quadruples), <now_ms>, ..]; now_ms a number or "*".
    Decision j takes the next k_j keys, then its override keys. Decided one after the other as
    sliding_allow_v2 would; the reply is their replies, concatenated. Invalid arguments anywhere
    write nothing; a CLOCKSKEW or an invalid override of decision j is the reply of the whole call,
    decisions 1 .. j-1 staying recorded (retried with the same members, they cannot count twice).

  Errors, before the decision writes anything:
    "ERR invalid arguments"          an argument missing, not a whole number or out of range, a cost
                                     above a limit, a bad member, a repeated key, keys not matching
                                     the flags; in a batch, decisions of the wrong JSON types
    "CLOCKSKEW ..."                  now_ms is more than max_skew_ms behind a key's newest entry
                                     (bucketed: the start of its newest sub-window)
    "ERR invalid override at <key>"  an override hash without a known action, or a bad limit
  Every key written gets a TTL lasting until its newest entry (sub-window) leaves the window.
]]

local MAX_TIME_MS      = 1e15
local MAX_LIMIT        = 1e15
local MAX_SUB_WINDOWS  = 1000
local MAX_LOG_COST     = 10000
-- Request ids a bucketed key remembers, newest first: at most RECENT_IDS, within RECENT_IDS_BYTES,
-- so that every value stays within Redis' compact listpack encoding (64 bytes).
local RECENT_IDS       = 8
local RECENT_IDS_BYTES = 64
local ZADD_CHUNK       = 1000 -- entries per ZADD when a costly request adds many
local SCAN_STEP        = 8    -- sub-windows per HMGET when a key's counts are read in order
local OVERRIDE_KINDS   = { limit = 1, exempt = 2, block = 3 }
local EXEMPT, BLOCK    = 2, 3

-- Redis' and Lua's globals as upvalues, bound by a library's first call: its load sees none of
-- them (only redis.register_function), and a global read during a call goes through the globals'
-- metatable, two table lookups per name, dozens of times per decision.
local call, protected_call, error_reply, json_decode
local format, find, sub, byte, floor, ceil, min, max, sort, concat
local tonumber, type, unpack, ipairs, pcall, error

local function bind_globals()
  call, protected_call, error_reply, json_decode = redis.call, redis.pcall, redis.error_reply, cjson.decode
  format, find, sub, byte = string.format, string.find, string.sub, string.byte
  floor, ceil, min, max = math.floor, math.ceil, math.min, math.max
  sort, concat = table.sort, table.concat
  tonumber, type, unpack, ipairs, pcall, error = _G.tonumber, _G.type, _G.unpack, _G.ipairs, _G.pcall, _G.error
end

-- The numbers of texts that repeat call after call (a limit's window, limit, precision and flags,
-- the cost, the tolerance, a key's precision), remembered: tonumber reads a text with strtod twice,
-- several times the cost of a table lookup. At most NUMBERS_KEPT texts, then forgotten together.
local NUMBERS_KEPT = 256
local numbers, numbers_kept = {}, 0

local function number_of(text)
  local n = numbers[text]
  if n == nil and text ~= nil then
    n = tonumber(text) or false
    if numbers_kept == NUMBERS_KEPT then numbers, numbers_kept = {}, 0 end
    numbers[text], numbers_kept = n, numbers_kept + 1
  end
  return n or nil
end

local function invalid_arguments()
  return error_reply('ERR invalid arguments')
end

-- `n` when it is a whole number from `low` to `high` (NaN and infinities fail a bound), else nil.
local function whole(n, low, high)
  return n and n >= low and n <= high and n % 1 == 0 and n or nil
end

-- A decoded JSON value as `whole` takes it: only a number (tonumber would read a string too).
local function number(value)
  return type(value) == 'number' and value or nil
end

-- Integers reach commands as '%d' text: a Lua number is printed by Redis with '%.17g', at several
-- times the cost.
local function digits(n)
  return format('%d', n)
end

local function server_now()
  local time = call('TIME')
  return tonumber(time[1]) * 1000 + floor(tonumber(time[2]) / 1000)
end

-- No whitespace (a bucketed key keeps ids space-separated) and no '#' (a log key's cost entries
-- are <member>#2 .. <member>#c: a member containing one could be taken for another's entry).
local function is_valid_member(member)
  return type(member) == 'string' and member ~= '' and not find(member, '[%s#]')
end

-- A limit from its four numbers, or nil when one is missing or out of range for `cost`.
local function new_limit(window, limit, precision, flags, cost)
  window, limit = whole(window, 1, MAX_TIME_MS), whole(limit, cost, MAX_LIMIT)
  precision, flags = whole(precision, 0, MAX_TIME_MS), whole(flags, 0, 3)
  if not (window and limit and precision and flags) then
    return nil
  end
  if precision == 0 and cost > MAX_LOG_COST
    or precision > 0 and (precision > window or window > precision * MAX_SUB_WINDOWS) then
    return nil
  end
  -- Every field a decision sets is named here: a table sized once, not grown field by field.
  return { window = window, precision = precision, shadow = flags % 2 == 1,
           has_override = flags >= 2, kind = 0, effective = limit, key = false, override_key = false,
           state = false, room = false, retried = nil }
end

-- Gives n limits their keys from keys[first]: n limit keys, then the override keys of the limits
-- that have one, in order. Returns the index of the last key taken, or nil for a repeated key.
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

local function clock_skew(now_ms, newest, key, max_skew_ms)
  return error_reply(format(
    'CLOCKSKEW now_ms %d is %d ms behind the newest entry of %s (tolerance %d ms)',
    now_ms, newest - now_ms, key, max_skew_ms))
end

local function is_wrong_type(reply)
  return type(reply) == 'table' and reply.err ~= nil and sub(reply.err, 1, 9) == 'WRONGTYPE'
end

---------------------------------------------------------------------------------------- overrides

-- Reads the overrides of `limits`, whose keys are keys[from .. to]: one EXISTS first (an integer
-- reply, the cheapest), so that keys without any cost one command. Sets each limit's `kind` and
-- `effective` limit; returns an error reply for a malformed override.
local function read_overrides(keys, from, to, limits)
  if to < from or call('EXISTS', unpack(keys, from, to)) == 0 then
    return nil
  end
  for i = 1, #limits do
    local lim = limits[i]
    if lim.has_override then
      local fields = call('HMGET', lim.override_key, 'action', 'limit')
      if fields[1] then
        local kind = OVERRIDE_KINDS[fields[1]]
        local value = whole(tonumber(fields[2]), 0, MAX_LIMIT)
        if kind == nil or (kind == 1 and value == nil) then
          return error_reply('ERR invalid override at ' .. lim.override_key)
        end
        lim.kind, lim.effective = kind, kind == 1 and value or kind == BLOCK and 0 or lim.effective
      end
    end
  end
  return nil
end

-- When an override refuses whatever the window holds: its remaining TTL, or the window without one.
local function until_override_ends(lim)
  local ttl = call('PTTL', lim.override_key)
  return ttl < 0 and lim.window or ttl
end

---------------------------------------------------------------------------------------------- log

local function newest_score(key)
  return tonumber(call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
end

-- A log key read for a decision: its count in the window and its newest time when one lies after
-- now_ms (`ahead`); nil when the key is a hash. A decision drops what left the window first (ZCARD
-- then counts: cheaper than ZCOUNT, which walks a small sorted set entry by entry); a peek counts.
local function read_log(lim, now_ms, writes)
  local key, now_text, cutoff_text = lim.key, digits(now_ms), digits(now_ms - lim.window)
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

-- Records a request in a log key; returns the cost added (0 when the member is there already).
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
  call('PEXPIRE', key, digits(ceil(state.ahead + lim.window - now_ms)))
  state.count = state.count + cost
  return cost
end

-- ms until the cost fits in a log limit: when count + cost - limit entries have left the window.
local function log_retry_after(lim, now_ms, count, cost, limit)
  local entry = call('ZRANGEBYSCORE', lim.key, '(' .. lim.state.cutoff_text, '+inf', 'WITHSCORES', 'LIMIT',
                           count + cost - limit - 1, 1)
  return ceil(tonumber(entry[2]) + lim.window - now_ms)
end

----------------------------------------------------------------------------------------- bucketed

-- ms from now_ms until sub-window `index` (of `precision`) stops counting.
local function until_bucket_leaves(index, now_ms, window, precision)
  return (index + 1) * precision + window - 1 - now_ms
end

-- Adds `count` to sub-window `index`. A state read from the key's total (no table of counts) moves
-- only its count, oldest and newest.
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

-- A bucketed key's state: its count, oldest and newest sub-windows, ids and precision; the names of
-- the sub-windows that left (`gone`); `counts` per sub-window (and their `indexes`) when read whole,
-- `rewrite` when re-bucketed; t, o and n as stored when read from them (`stored_oldest`, ..). Only
-- the fields in use are made: each costs a table insertion.
local function empty_buckets(precision)
  return { count = 0, ids = '', precision = precision, counts = {}, indexes = {}, oldest = nil, newest = nil,
           rewrite = false, gone = nil, ahead = nil }
end

-- The precision a hash of precision `stored` is counted in by a limit of (window, precision): its
-- own, unless finer than the window allows (more than 1000 sub-windows): then the limit's, or the
-- finest the window allows for a log limit. Never finer than the key's: never a lock-out.
local function counted_precision(stored, window, precision)
  return stored * MAX_SUB_WINDOWS >= window and stored or max(precision, ceil(window / MAX_SUB_WINDOWS))
end

-- A hash read whole (HGETALL `fields`) in `precision`: counts per sub-window still counted, and
-- the names of those that left (deleted when a request is recorded). A hash of another precision
-- is re-bucketed, each count into the sub-window holding its old one's last millisecond (or now),
-- so that it counts at least as long as before; the key is rewritten when a request is recorded.
local function read_buckets(fields, now_ms, window, precision, stored)
  local first = floor((now_ms - window + 1) / stored)
  local state = empty_buckets(precision)
  state.rewrite = stored ~= precision
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
        add_count(state, floor(min((index + 1) * stored - 1, now_ms) / precision), tonumber(fields[i + 1]))
      else
        add_count(state, index, tonumber(fields[i + 1]))
      end
    end
  end
  return state
end

-- Visits the sub-windows held from `from` to `to`, oldest first, read `step` at a time (then
-- SCAN_STEP) by HMGET: visit(index, count, name) until it returns true; returns that index.
local function scan_held(key, from, to, step, visit)
  local index = from
  while index <= to do
    local names = {}
    for i = index, min(index + step - 1, to) do
      names[#names + 1] = digits(i)
    end
    local counts = call('HMGET', key, unpack(names))
    for k = 1, #counts do
      if counts[k] and visit(index + k - 1, tonumber(counts[k]), names[k]) then
        return index + k - 1
      end
    end
    index, step = index + #names, SCAN_STEP
  end
  return nil
end

-- A fast-path state whose oldest sub-windows have left the window (before `first`): their counts
-- are read by name and taken off its count; they are deleted when a request is recorded.
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
    scan_held(key, index, last_gone, SCAN_STEP, function(_, count, name)
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

-- A hash read for a decision, or nil when the key is a sorted set. While the key's total, oldest
-- and newest sub-windows (fields t, o, n) are there, the count is the total less the sub-windows
-- that left since, without reading every sub-window. Reads only.
local function read_hash(key, now_ms, window, precision)
  local meta = protected_call('HMGET', key, 't', 'o', 'n', 'p', 'ids')
  if meta.err then
    return not is_wrong_type(meta) and error(meta.err) or nil
  end
  local total, oldest, newest, stored = tonumber(meta[1]), tonumber(meta[2]), tonumber(meta[3]), number_of(meta[4])
  if not (total or oldest or newest or stored or meta[5]) then
    -- Nothing of ours: a new key.
    return empty_buckets(precision > 0 and precision or ceil(window / MAX_SUB_WINDOWS))
  end
  if total and oldest and newest and stored and stored * MAX_SUB_WINDOWS >= window then
    local state = { count = total, oldest = oldest, newest = newest, ids = meta[5] or '', precision = stored,
                    stored_oldest = oldest, stored_newest = newest, gone = nil }
    local first = floor((now_ms - window + 1) / stored)
    if oldest < first then
      expire_sub_windows(key, state, first)
    end
    return state
  end
  local fields = call('HGETALL', key)
  stored = stored or (precision > 0 and precision or 1)
  return read_buckets(fields, now_ms, window, counted_precision(stored, window, precision), stored)
end

local function ids_hold(ids, member)
  -- Searched in place: a match must be a whole id, between spaces.
  local at = find(ids, member, 1, true)
  while at do
    local after = at + #member
    if (at == 1 or byte(ids, at - 1) == 32) and (after > #ids or byte(ids, after) == 32) then
      return true
    end
    at = find(ids, member, at + 1, true)
  end
  return false
end

-- The ids with `member` in front; the oldest fall off past RECENT_IDS or RECENT_IDS_BYTES. The ids
-- kept are a prefix of the old list, found by its spaces rather than split and joined again.
local function with_id(old, member)
  local budget = RECENT_IDS_BYTES - #member - 1
  local cut, from = 0, 1
  for _ = 2, RECENT_IDS do
    local space = find(old, ' ', from, true)
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
    return member .. ' ' .. sub(old, 1, cut)
  end
  return member
end

-- Writes a bucketed key whole (re-bucketed, or a log turned into counts), with its TTL.
local function write_buckets(key, state, now_ms, window)
  call('DEL', key)
  local args = {}
  sort(state.indexes)
  for _, index in ipairs(state.indexes) do
    args[#args + 1] = digits(index)
    args[#args + 1] = digits(state.counts[index])
  end
  args[#args + 1], args[#args + 2] = 'ids', state.ids
  args[#args + 1], args[#args + 2] = 'p', digits(state.precision)
  args[#args + 1], args[#args + 2] = 't', digits(state.count)
  args[#args + 1], args[#args + 2] = 'o', digits(state.oldest)
  args[#args + 1], args[#args + 2] = 'n', digits(state.newest)
  call('HSET', key, unpack(args))
  call('PEXPIRE', key, digits(until_bucket_leaves(state.newest, now_ms, window, state.precision)))
end

-- A log key's entries in the window as counts per sub-window of `precision` (exact), with the
-- newest request ids (entries without a #n suffix) to recognise retries.
local function log_as_buckets(lim)
  local entries = call('ZRANGEBYSCORE', lim.key, '(' .. lim.state.cutoff_text, '+inf', 'WITHSCORES')
  local state = empty_buckets(lim.precision)
  local ids, length = {}, -1
  for i = #entries - 1, 1, -2 do
    add_count(state, floor(tonumber(entries[i + 1]) / lim.precision), 1)
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

-- The oldest sub-window held from `from`, `last` (held) when none before it is. Written as the key's
-- bound `o` when a request fills the key: the refusals that follow, which write nothing, then read
-- no sub-window that left before them, however long the gap after it; found once per fill.
local function oldest_held(key, from, last)
  return scan_held(key, from, last - 1, SCAN_STEP, any_held) or last
end

-- Records a request in a bucketed key (not a retry: the caller checked its ids).
local function record_buckets(key, state, now_ms, window, member, cost, limit)
  local index = floor(now_ms / state.precision)
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
    return write_buckets(key, state, now_ms, window)
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
    args[#args + 1], args[#args + 2] = 'p', digits(state.precision)
  end
  call('HSET', key, unpack(args))
  -- The key's TTL lasts until its newest sub-window leaves already: only a newer one moves it.
  if newest_before == nil or index > newest_before then
    call('PEXPIRE', key, digits(until_bucket_leaves(index, now_ms, window, state.precision)))
  end
end

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
  return scan_held(key, state.oldest, state.newest, 1, function(_, count)
    left = left - count
    return left + cost <= limit
  end) or state.newest
end

------------------------------------------------------------------------------------------ a limit

-- A limit's key read for a decision, by what it holds: a sorted set as a log, a hash in its own
-- precision, a missing key as the limit's own kind. `ahead`: the newest time after now_ms.
local function read_key(lim, now_ms, writes)
  if lim.precision == 0 then
    local state = read_log(lim, now_ms, writes)
    if state then
      return state
    end
  end
  local state = read_hash(lim.key, now_ms, lim.window, lim.precision)
  if state == nil then
    -- Not a hash: a sorted set, or a key of another type, whose WRONGTYPE error this read raises.
    return read_log(lim, now_ms, writes) or call('ZCARD', lim.key)
  end
  if state.newest and state.newest * state.precision > now_ms then
    state.ahead = state.newest * state.precision
  end
  return state
end

-- Whether `member` is recorded in a limit's key already (a retry).
local function holds(lim, member)
  if lim.retried == nil then
    if lim.state.precision then
      lim.retried = ids_hold(lim.state.ids, member)
    else
      lim.retried = call('ZSCORE', lim.key, member) ~= false
    end
  end
  return lim.retried
end

-- Records a request in a limit's key; returns the cost added (0 when the member is there already:
-- a log's ZADD tells, a hash's ids, and ZSCORE for a log about to become a hash).
local function record(lim, now_ms, member, cost)
  if lim.state.precision == nil and lim.precision == 0 then
    return record_log(lim, now_ms, member, cost)
  elseif holds(lim, member) then
    return 0
  elseif lim.state.precision == nil then
    -- A log read by a bucketed limit becomes a hash of the limit's precision.
    lim.state = log_as_buckets(lim)
  end
  record_buckets(lim.key, lim.state, now_ms, lim.window, member, cost, lim.effective)
  return cost
end

-- Writes a limit's seven integers into the reply after reply[at].
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
      elseif state.precision then
        retry_after_ms = until_bucket_leaves(leaving_index(lim.key, state, limit, cost), now_ms, lim.window,
                                             state.precision)
      else
        retry_after_ms = log_retry_after(lim, now_ms, count, cost, limit)
      end
    end
    if count > 0 then
      if state.precision then
        reset_ms = until_bucket_leaves(state.newest, now_ms, lim.window, state.precision)
      else
        reset_ms = ceil((state.ahead or newest_score(lim.key)) + lim.window - now_ms)
      end
    end
    reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] =
      lim.room and 1 or 0, count, max(limit - count, 0), retry_after_ms, reset_ms
  end
  reply[at + 6], reply[at + 7] = lim.effective, lim.kind
end

------------------------------------------------------------------------------------------ decisions

-- One request against its limits (keys assigned, overrides read). Writes its reply after
-- reply[at]; returns an error reply instead when the clock is skewed. `max_skew_ms` nil: a peek
-- (writes nothing).
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

-- A reply of one decision of n limits, sized at once for the usual one limit.
local function new_reply(n)
  return n == 1 and { 0, 0, 0, 0, 0, 0, 0, 0 } or {}
end

-- The limits of a single call (quadruples from args[first], the cost just before them) with their
-- keys and overrides read; nil when the arguments are invalid, or an error reply.
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

local function resolve_now(text)
  return text == '*' and server_now() or whole(tonumber(text), 0, MAX_TIME_MS)
end

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

-- The decision at list[at] of a batch, its keys after keys[taken]: its limits (keys assigned), the
-- range of its override keys and the index of its last key; nil when it is invalid.
local function batch_decision(keys, list, at, taken)
  local now_ms, cost, n = list[at], whole(number(list[at + 2]), 1, MAX_TIME_MS), whole(number(list[at + 3]), 1, 1000)
  if now_ms ~= '*' and not whole(number(now_ms), 0, MAX_TIME_MS) or not is_valid_member(list[at + 1]) or not cost
    or not n then
    return nil
  end
  local limits = {}
  for i = 1, n do
    local q = at + 4 * i
    limits[i] = new_limit(number(list[q]), number(list[q + 1]), number(list[q + 2]), number(list[q + 3]), cost)
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
  -- Every decision is checked before the first one writes.
  local decisions, at, taken = {}, 1, 0
  while at <= #list do
    local decision = batch_decision(keys, list, at, taken)
    if not decision then
      return invalid_arguments()
    end
    decisions[#decisions + 1] = decision
    at, taken = at + 4 + 4 * #decision.limits, decision.last
  end
  if taken ~= #keys then
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
    local now_ms = d.now == '*' and server_now() or d.now
    local failed = overrides and read_overrides(keys, d.overrides_from, d.last, d.limits)
      or decide(reply, length, d.limits, now_ms, d.member, max_skew_ms, d.cost)
    if failed then
      return failed
    end
    length = length + 1 + 7 * #d.limits
  end
  return reply
end

redis.register_function('sliding_allow_v2', sliding_allow)
redis.register_function('sliding_allow_many_v2', sliding_allow_many)
redis.register_function{
  function_name = 'sliding_peek_v2',
  callback      = sliding_peek,
  flags         = {'no-writes'},
}
