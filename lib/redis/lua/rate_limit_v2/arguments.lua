--[[
  arguments: Redis' and Lua's globals bound as upvalues, and the readers of the arguments; every
  part after this one uses them.
    bind_globals()              binds the upvalues; each entry point calls it first
    number_of(text)             tonumber(text), remembered for texts that repeat call after call
    whole(n, low, high)         n when a whole number from low to high (NaN and infinities fail), else nil
    digits(n)                   the integer n as '%d' text, the form commands take it in (remembered)
    resolve_now(text)           now_ms: a whole number of ms from 0 to 1e15, or the server's for "*"
    is_valid_member(member)     a request id: not empty, no whitespace, no '#'
    invalid_arguments()         the error reply "ERR invalid arguments"; is_wrong_type(reply): a WRONGTYPE
]]

local MAX_TIME_MS = 1e15
local MAX_LIMIT   = 1e15

-- A library's load sees none of Redis' globals (only redis.register_function), and a global read
-- during a call goes through the globals' metatable: bound by the first call instead.
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

-- tonumber reads a text with strtod twice, several times the cost of a table lookup, and a limit's
-- numbers repeat call after call. At most NUMBERS_KEPT texts, then forgotten together.
local NUMBERS_KEPT          = 256
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

local function whole(n, low, high)
  return n and n >= low and n <= high and n % 1 == 0 and n or nil
end

-- Redis prints a Lua number with '%.17g', at several times the cost of '%d'; and a batch formats
-- the same times and TTLs over and over. At most NUMBERS_KEPT texts, then forgotten together.
local texts, texts_kept = {}, 0

local function digits(n)
  local text = texts[n]
  if text == nil then
    text = format('%d', n)
    if texts_kept == NUMBERS_KEPT then texts, texts_kept = {}, 0 end
    texts[n], texts_kept = text, texts_kept + 1
  end
  return text
end

local function resolve_now(text)
  if text == '*' then
    local time = call('TIME')
    return tonumber(time[1]) * 1000 + floor(tonumber(time[2]) / 1000)
  end
  return whole(tonumber(text), 0, MAX_TIME_MS)
end

-- No whitespace (a bucketed key keeps ids space-separated) and no '#' (a log key's cost entries
-- are <member>#2 .. <member>#c: a member containing one could be taken for another's entry).
local function is_valid_member(member)
  return type(member) == 'string' and member ~= '' and not find(member, '[%s#]')
end

local function invalid_arguments()
  return error_reply('ERR invalid arguments')
end

local function is_wrong_type(reply)
  return type(reply) == 'table' and reply.err ~= nil and sub(reply.err, 1, 9) == 'WRONGTYPE'
end
