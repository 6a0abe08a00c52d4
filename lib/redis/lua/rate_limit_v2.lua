#!lua name=rate_limit_v2
--[[
  rate_limit_v2: sliding window log with the same data layout as rate_limit_v1
  (one sorted set per limited key, score = time in ms, member = request id),
  so v1 and v2 can serve the same keys side by side during a canary.

  FCALL sliding_allow_v2 <n> <key_1> .. <key_n> <now_ms> <member> <max_skew_ms>
                            <window_ms_1> <limit_1> .. <window_ms_n> <limit_n>

    KEYS[i]       sorted set of limit i (all n keys must hash to one cluster slot)
    ARGV[1]       now_ms       the caller's time in ms (0 to 1e15), or "*" for the server's clock (TIME)
    ARGV[2]       member       unique id of this request (not empty)
    ARGV[3]       max_skew_ms  how far now_ms may lag behind a key's newest entry, 0 to 1e15 ms
    ARGV[2+2i]    window_ms_i  window length of limit i, ms > 0 and <= 1e15
    ARGV[3+2i]    limit_i      requests allowed per window by limit i, a whole number > 0

  The request is recorded in every key only if every limit has room; a request
  rejected by one limit consumes quota in none. A member already recorded under
  KEYS[1] (a retry of a call whose reply was lost) is answered as allowed again
  without recording anything: a retried request never counts twice.

  Reply (integers): {allowed, count_1, remaining_1, retry_after_ms_1, reset_ms_1, ..}
    allowed           1 recorded, 0 rejected (nothing recorded)
    count_i           entries in window i, this request included when allowed
    remaining_i       room left in limit i
    retry_after_ms_i  0 when allowed, and for a limit with room; otherwise ms until
                      enough of its oldest entries leave the window for one more
                      request to fit
    reset_ms_i        ms until window i is completely empty again (0 when it is)


  FCALL_RO sliding_peek_v2 <n> <key_1> .. <key_n> <now_ms> <window_ms_1> <limit_1> ..

    Same meaning as above; records nothing and writes nothing (flag no-writes, so
    it also runs on a replica). Reply has the same shape; allowed says whether a
    sliding_allow_v2 with these arguments would be admitted now.

  FCALL sliding_allow_many_v2 <n> <key_1> .. <key_n> <max_skew_ms> <decisions>
    decisions = a JSON array, the decisions one after the other, flat:
      [<now_ms>, "<member>", <k>, <window_ms_1>, <limit_1>, .. <window_ms_k>, <limit_k>, <now_ms>, ..]
    now_ms a number or "*", member a string, k / window_ms / limit numbers

    Several independent requests in one call (a client batching what arrives at
    once): decision j takes the next k_j keys, in order, and is decided exactly as
    a sliding_allow_v2 of those keys with these arguments would be, one after the
    other, so a later decision sees what an earlier one recorded (the same key may
    appear in several decisions). The n keys must hash to one cluster slot. The
    decisions travel as one JSON argument rather than as 5 arguments each: a batch
    of 16 is then 18 arguments instead of 97, which costs the client and the server
    less to write and to read than the JSON costs to make and to decode.

  Reply (integers): the sliding_allow_v2 replies of the decisions, concatenated:
    {allowed_1, count, remaining, retry_after_ms, reset_ms (x k_1), allowed_2, ..}

  If any decision's arguments are invalid, nothing is written. A CLOCKSKEW of
  decision j is the reply of the whole call, and decisions 1 .. j-1 stay recorded:
  the caller retries them one by one with the same members, which cannot count
  any of them twice.

  Errors, before the decision writes anything (in a batch, earlier decisions stay recorded):
    "ERR invalid arguments"  a missing or non-numeric argument, window or limit <= 0,
                             a fractional limit, a missing member, a repeated key;
                             in a batch also decisions that are not a JSON array of
                             values of the types above
    "CLOCKSKEW ..."          now_ms is more than max_skew_ms behind a key's newest
                             entry: a gateway's clock is wrong, and recording would
                             corrupt the window
  Every key written gets a TTL that lasts until its newest entry leaves the window.
]]

-- Longer windows would make PEXPIRE's argument print in exponent form ("1e+17"), which Redis
-- refuses after the entry was written, leaving a key without TTL: refuse them up front. Times and
-- tolerances are bounded alike (a year 33,000 time), so no TTL computed from them can overflow.
local MAX_WINDOW_MS = 1e15
local MAX_TIME_MS   = 1e15

-- The bounds also keep NaN and infinities out: NaN fails every comparison, and each check bounds
-- its value on both sides (a limit through `% 1`, which is NaN for an infinite one).
local function is_time(n)
  return n ~= nil and n >= 0 and n <= MAX_TIME_MS
end

local function invalid_arguments()
  return redis.error_reply('ERR invalid arguments')
end

-- "*" asks for the server's clock: one clock for every gateway, at the price of
-- trusting the Redis host's time.
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

local function is_valid_limit(window_ms, limit)
  return window_ms ~= nil and limit ~= nil
    and window_ms > 0 and window_ms <= MAX_WINDOW_MS and limit > 0 and limit % 1 == 0
end

-- Reads n (window_ms, limit) pairs starting at args[first]; nil when one is invalid.
local function parse_limits(args, first, n)
  local windows, limits = {}, {}
  for i = 1, n do
    local window_ms = tonumber(args[first + 2 * (i - 1)])
    local limit     = tonumber(args[first + 2 * (i - 1) + 1])
    if not is_valid_limit(window_ms, limit) then
      return nil
    end
    windows[i], limits[i] = window_ms, limit
  end
  return windows, limits
end

-- Whether keys[first .. last] name a key twice: it would be counted twice and recorded once.
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

-- Numbers reach commands as text, and printing one ("%.17g", as Redis prints a Lua number given to
-- redis.call) costs about as much as a command's own work. The decisions of a batch mostly share
-- their time, window and TTL, so there a number equal to the one printed last in the same role is
-- not printed again (only positive ones: -0 equals 0 but prints differently). A single decision
-- prints its time once for two commands, and lets Redis print the rest. Each call starts afresh.
local printed_number, printed_text = {}, {}
local in_batch = false

local function start_call(batch)
  in_batch = batch
  printed_number.now, printed_number.after, printed_number.cutoff, printed_number.ttl = nil, nil, nil, nil
end

local function as_text(role, n)
  if printed_number[role] ~= n or n <= 0 then
    printed_number[role], printed_text[role] = n, string.format('%.17g', n)
  end
  return printed_text[role]
end

-- '(' .. as_text('now', n): the exclusive bound "after now", made once per time as well.
local function after_text(n)
  if printed_number.after ~= n or n <= 0 then
    printed_number.after, printed_text.after = n, '(' .. as_text('now', n)
  end
  return printed_text.after
end

-- A number argument: printed once per batch (as_text), or as it is in a single decision.
local function number_arg(role, n)
  if in_batch then
    return as_text(role, n)
  end
  return n
end

local function newest_score(key)
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return tonumber(newest[2])
end

-- The newest score when an entry lies after now_ms (another caller's clock runs ahead), else nil.
-- Counting is much cheaper than reading a score back, and almost always finds nothing.
local function newest_after(key, now_ms)
  if redis.call('ZCOUNT', key, after_text(now_ms), '+inf') == 0 then
    return nil
  end
  return newest_score(key)
end

-- ms until the in-window entry at position `offset` (0 = oldest) leaves the window.
local function until_entry_leaves(key, now_ms, window_ms, offset)
  local entry = redis.call('ZRANGEBYSCORE', key, string.format('(%.17g', now_ms - window_ms), '+inf',
                           'WITHSCORES', 'LIMIT', offset, 1)
  return math.ceil(tonumber(entry[2]) + window_ms - now_ms)
end

-- count, remaining, retry_after_ms and reset_ms of one limit.
local function limit_state(allowed, key, now_ms, window_ms, limit, count, newest)
  local retry_after_ms = 0
  if allowed == 0 and count >= limit then
    -- count - limit + 1 entries must leave before one more fits.
    retry_after_ms = until_entry_leaves(key, now_ms, window_ms, count - limit)
  end
  local reset_ms = 0
  if count > 0 then
    -- Without an entry after now_ms (newest nil), the newest is read only when needed: rarely.
    reset_ms = math.ceil((newest or newest_score(key)) + window_ms - now_ms)
  end
  return count, math.max(limit - count, 0), retry_after_ms, reset_ms
end

-- Appends the limit_state of one limit to reply.
local function report(reply, allowed, key, now_ms, window_ms, limit, count, newest)
  local at = #reply
  reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4] = limit_state(allowed, key, now_ms, window_ms, limit, count, newest)
end

-- Whether this request id was recorded already: the call is a retry of one whose reply was lost.
-- A recorded request is recorded under every key (the call is atomic), so the first key tells.
local function already_recorded(key, member)
  return redis.call('ZSCORE', key, member) ~= false
end

local function clock_skew(now_ms, newest, key, max_skew_ms)
  return redis.error_reply(string.format(
    'CLOCKSKEW now_ms %d is %d ms behind the newest entry of %s (tolerance %d ms)',
    now_ms, newest - now_ms, key, max_skew_ms))
end

-- One key: the decision of the general path below without its per-key tables. Most calls take it,
-- and it costs Redis about 15% less. Returns the five integers of its reply (no table: a batch
-- appends them to its own), or an error reply.
local function allow_one(key, now_ms, member, max_skew_ms, window_ms, limit)
  local newest = newest_after(key, now_ms)
  -- A retry carries its original now_ms, which newer entries may have overtaken since.
  if newest and newest - now_ms > max_skew_ms and not already_recorded(key, member) then
    return clock_skew(now_ms, newest, key, max_skew_ms)
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', number_arg('cutoff', now_ms - window_ms))
  local count = redis.call('ZCARD', key)
  if count >= limit and not already_recorded(key, member) then
    return 0, limit_state(0, key, now_ms, window_ms, limit, count, newest)
  end
  -- ZADD adds nothing for a retry whose request is already recorded: counts stay exact.
  count = count + redis.call('ZADD', key, as_text('now', now_ms), member)
  -- Expire when the newest entry leaves the window, even if it is ahead of now_ms.
  local reset_ms = math.ceil((newest or now_ms) + window_ms - now_ms)
  redis.call('PEXPIRE', key, number_arg('ttl', reset_ms))
  return 1, count, math.max(limit - count, 0), 0, reset_ms
end

-- Several keys, all or none recorded. Appends the decision to `reply`; returns an error reply instead.
local function allow_all(reply, keys, now_ms, member, max_skew_ms, windows, limits)
  local n = #keys
  -- newest[i]: the newest score of key i when it lies after now_ms, nil otherwise.
  local newest = {}
  for i = 1, n do
    newest[i] = newest_after(keys[i], now_ms)
    if newest[i] and newest[i] - now_ms > max_skew_ms and not already_recorded(keys[1], member) then
      return clock_skew(now_ms, newest[i], keys[i], max_skew_ms)
    end
  end

  local counts, allowed = {}, 1
  for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', keys[i], '-inf', number_arg('cutoff', now_ms - windows[i]))
    counts[i] = redis.call('ZCARD', keys[i])
    if counts[i] >= limits[i] then
      allowed = 0
    end
  end
  -- Only a full window needs the retry check: with room, ZADD below tells a retry by adding nothing.
  if allowed == 0 and already_recorded(keys[1], member) then
    allowed = 1
  end

  reply[#reply + 1] = allowed
  for i = 1, n do
    if allowed == 1 then
      counts[i] = counts[i] + redis.call('ZADD', keys[i], as_text('now', now_ms), member)
      newest[i] = newest[i] or now_ms
      redis.call('PEXPIRE', keys[i], number_arg('ttl', math.ceil(newest[i] + windows[i] - now_ms)))
    end
    report(reply, allowed, keys[i], now_ms, windows[i], limits[i], counts[i], newest[i])
  end
  return nil
end

local function sliding_allow(keys, args)
  start_call(false)
  local n = #keys
  if n < 1 or #args ~= 3 + 2 * n or (n > 1 and has_repeated_key(keys, 1, n)) then
    return invalid_arguments()
  end
  local now_ms      = resolve_now(args[1])
  local member      = args[2]
  local max_skew_ms = tonumber(args[3])
  if not now_ms or member == '' or not is_time(max_skew_ms) then
    return invalid_arguments()
  end
  if n == 1 then
    local window_ms, limit = tonumber(args[4]), tonumber(args[5])
    if not is_valid_limit(window_ms, limit) then
      return invalid_arguments()
    end
    local allowed, count, remaining, retry_after_ms, reset_ms = allow_one(keys[1], now_ms, member, max_skew_ms, window_ms, limit)
    if type(allowed) == 'table' then
      return allowed -- an error reply
    end
    return {allowed, count, remaining, retry_after_ms, reset_ms}
  end
  local windows, limits = parse_limits(args, 4, n)
  if not windows then
    return invalid_arguments()
  end
  local reply = {}
  return allow_all(reply, keys, now_ms, member, max_skew_ms, windows, limits) or reply
end

-- The key count of the decision at list[at] of sliding_allow_many (its decoded JSON, `size` long),
-- whose keys follow the first `taken`; nil when it is invalid. JSON gives typed values: a number
-- must be a number, not a numeric string.
local function decision_key_count(keys, key_count, list, size, at, taken)
  local now_ms, member, n = list[at], list[at + 1], list[at + 2]
  if type(n) ~= 'number' or not (n >= 1 and n % 1 == 0 and taken + n <= key_count and at + 2 + 2 * n <= size) then
    return nil
  end
  if now_ms ~= '*' and (type(now_ms) ~= 'number' or not is_time(now_ms)) then
    return nil
  end
  if type(member) ~= 'string' or member == '' then
    return nil
  end
  for i = at + 3, at + 1 + 2 * n, 2 do
    local window_ms, limit = list[i], list[i + 1]
    if type(window_ms) ~= 'number' or type(limit) ~= 'number' or not is_valid_limit(window_ms, limit) then
      return nil
    end
  end
  if n > 1 and has_repeated_key(keys, taken + 1, taken + n) then
    return nil
  end
  return n
end

-- The decisions argument decoded, or nil when it is not a JSON array.
local function decode_decisions(text)
  local ok, list = pcall(cjson.decode, text)
  if ok and type(list) == 'table' then
    return list
  end
  return nil
end

-- The decision at list[at] with several keys (keys[taken + 1] on): appends its reply to `reply`,
-- or returns an error reply.
local function allow_decision_of_keys(reply, keys, list, at, taken, now_ms, max_skew_ms)
  local own_keys, windows, limits = {}, {}, {}
  for i = 1, list[at + 2] do
    own_keys[i], windows[i], limits[i] = keys[taken + i], list[at + 1 + 2 * i], list[at + 2 + 2 * i]
  end
  return allow_all(reply, own_keys, now_ms, list[at + 1], max_skew_ms, windows, limits)
end

local function sliding_allow_many(keys, args)
  start_call(true)
  local max_skew_ms = tonumber(args[1])
  local list = #args == 2 and decode_decisions(args[2])
  local key_count = #keys
  if key_count < 1 or not is_time(max_skew_ms) or not list then
    return invalid_arguments()
  end
  -- Every decision is checked before the first one writes. JSON values are typed already, so the
  -- loop below reads them from `list` again rather than from copies (only a decision of several keys
  -- gathers its own, for allow_all).
  local size = #list
  local at, taken = 1, 0
  while at <= size do
    local n = decision_key_count(keys, key_count, list, size, at, taken)
    if not n then
      return invalid_arguments()
    end
    at, taken = at + 3 + 2 * n, taken + n
  end
  if taken ~= key_count then
    return invalid_arguments()
  end

  local reply, filled = {}, 0
  at, taken = 1, 0
  while at <= size do
    local now_ms, n = list[at], list[at + 2]
    if now_ms == '*' then
      now_ms = resolve_now('*')
    end
    if n == 1 then
      local allowed, count, remaining, retry_after_ms, reset_ms =
        allow_one(keys[taken + 1], now_ms, list[at + 1], max_skew_ms, list[at + 3], list[at + 4])
      if type(allowed) == 'table' then
        return allowed -- an error reply
      end
      reply[filled + 1], reply[filled + 2], reply[filled + 3], reply[filled + 4], reply[filled + 5] = allowed, count, remaining, retry_after_ms, reset_ms
      filled = filled + 5
    else
      local failed = allow_decision_of_keys(reply, keys, list, at, taken, now_ms, max_skew_ms)
      if failed then
        return failed
      end
      filled = #reply
    end
    at, taken = at + 3 + 2 * n, taken + n
  end
  return reply
end

local function sliding_peek(keys, args)
  local n = #keys
  if n < 1 or #args ~= 1 + 2 * n or (n > 1 and has_repeated_key(keys, 1, n)) then
    return invalid_arguments()
  end
  local now_ms = resolve_now(args[1])
  local windows, limits = parse_limits(args, 2, n)
  if not now_ms or not windows then
    return invalid_arguments()
  end

  local counts, allowed = {}, 1
  for i = 1, n do
    counts[i] = redis.call('ZCOUNT', keys[i], string.format('(%.17g', now_ms - windows[i]), '+inf')
    if counts[i] >= limits[i] then
      allowed = 0
    end
  end

  local reply = {allowed}
  for i = 1, n do
    report(reply, allowed, keys[i], now_ms, windows[i], limits[i], counts[i], newest_score(keys[i]))
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
