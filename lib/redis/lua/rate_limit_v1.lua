#!lua name=rate_limit_v1
--[[
  rate_limit_v1: sliding window log, one sorted set per limited key.

  FCALL sliding_allow_v1 1 <key> <now_ms> <window_ms> <limit> <member>

    KEYS[1]  key        sorted set of recorded requests (score = time in ms, member = request id)
    ARGV[1]  now_ms     the caller's current time, milliseconds (0 to 1e15)
    ARGV[2]  window_ms  window length, milliseconds, > 0 and <= 1e15
    ARGV[3]  limit      requests allowed per window, a whole number > 0
    ARGV[4]  member     unique id of this request (not empty)

  Reply (integers):
    {1, remaining}  allowed and recorded; remaining = room left after this request
    {0, 0}          rejected; nothing is recorded

  An entry whose score is <= now_ms - window_ms has left the window. A recorded
  request refreshes the key's TTL to window_ms, so the key expires exactly when
  its newest entry leaves the window; a rejection writes nothing.
  Bad arguments (also a window over 1e15 ms, which no TTL can express) -> error reply
  "ERR invalid arguments", before any write.
]]

local function is_finite(n)
  return n ~= nil and n == n and n > -math.huge and n < math.huge
end

-- Longer windows would make PEXPIRE's argument print in exponent form ("1e+17"), which Redis
-- refuses after the entry was written, leaving a key without TTL: refuse them up front.
local MAX_WINDOW_MS = 1e15
local MAX_TIME_MS   = 1e15

local function sliding_allow(keys, args)
  local key       = keys[1]
  local now_ms    = tonumber(args[1])
  local window_ms = tonumber(args[2])
  local limit     = tonumber(args[3])
  local member    = args[4]

  if not key or not is_finite(now_ms) or now_ms < 0 or now_ms > MAX_TIME_MS or not is_finite(window_ms) or not is_finite(limit)
      or window_ms <= 0 or window_ms > MAX_WINDOW_MS or limit <= 0 or limit % 1 ~= 0
      or not member or member == '' then
    return redis.error_reply('ERR invalid arguments')
  end

  redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms - window_ms)
  local count = redis.call('ZCARD', key)
  if count >= limit then
    return {0, 0}
  end

  redis.call('ZADD', key, now_ms, member)
  -- PEXPIRE takes whole milliseconds; rounding up keeps the entry alive for its full window.
  redis.call('PEXPIRE', key, math.ceil(window_ms))
  return {1, limit - count - 1}
end

redis.register_function('sliding_allow_v1', sliding_allow)
