#!lua name=rate_limit_v2
--[[
  rate_limit_v2: rate_limit_v1's sliding window, extended: per limit the exact LOG (a sorted set, v1's
  layout: v1 and v2 serve the same keys side by side) or the BUCKETED window of precision_ms (a hash of
  counts per sub-window: bounded memory); several limits per call; a cost; shadow limits; per-key
  overrides; retries that never count twice; the server's clock on request. The parts included below
  (rate_limit_v2/) hold the how; the package ships this file assembled.

  FCALL sliding_allow_v2 <n + m> <key_1> .. <key_n> <override_key_1> .. <override_key_m>
                         <now_ms> <member> <max_skew_ms> <cost> <quadruple_1> .. <quadruple_n>
    KEYS[i]        limit i's key (i <= n, n from 1 to 1000): a sorted set (log) or a hash (bucketed)
    KEYS[n+j]      the override key of the j-th limit whose flags include 2; all n + m keys in one slot
    ARGV[1]        now_ms          the caller's time in ms (0 to 1e15), or "*" for the server's clock
    ARGV[2]        member          unique id of this request (not empty, no whitespace, no '#')
    ARGV[3]        max_skew_ms     how far now_ms may lag behind a key's newest entry, 0 to 1e15 ms
    ARGV[4]        cost            what this request weighs, 1 to every limit (to 10,000 for a log)
    ARGV[1+4i ..]  quadruple_i     window_ms_i (1 to 1e15), limit_i (cost per window, 1 to 1e15),
                                   precision_ms_i (0: the log; else 1 to window_ms_i, at most 1000
                                   sub-windows), flags_i (0 enforced, 1 shadow; + 2: an override key)
    Every number is whole (as Lua's tonumber reads it).
  Admitted when every ENFORCED limit has room for the cost; their keys record it iff admitted. A
  SHADOW limit never refuses; its key records an admitted request iff it has room. A retry (member
  recorded under the anchor: the first enforced limit without an exempt or block override) is
  admitted, recorded nowhere again, unless an enforced limit is blocked; without an anchor, each key
  tells its own. A bucketed key recognises the retries of its last 8 requests; an older one counts
  twice. A bucketed key never admits more than the limit in any window_ms, never rejects what a log
  of window_ms + its precision would admit, admits a client that waited retry_after_ms; it keeps its
  precision until it expires (re-bucketed once, into a coarser one, if too fine for a window). A
  refusal writes nothing (it may trim a log). A key written lasts until its newest entry leaves.
  Overrides, read in the same call (their hash: rate_limit_v2/overrides.lua): limit (the key's limit
  is the override's), exempt (room always), block (no room; retry_after_ms the override's remaining
  TTL, or window_ms_i without one, as for an override's limit below the cost). An exempt or blocked
  limit's key is neither read nor written.

  Reply (integers): {allowed, then per limit: room_i, count_i, remaining_i, retry_after_ms_i,
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

  FCALL_RO sliding_peek_v2 <n + m> <keys as above> <now_ms> <cost> <quadruples>: writes nothing (runs
    on a replica); the same reply, allowed: would sliding_allow_v2 admit it now (no retry recognised).
  FCALL sliding_allow_many_v2 <keys> <max_skew_ms> <decisions>: decisions a flat JSON array,
    [<now_ms>, "<member>", <cost>, <k>, <k quadruples>, <now_ms>, ..], now_ms a number or "*";
    decision j takes its k_j keys, then its override keys. Decided in order as sliding_allow_v2
    would; the reply is their replies, concatenated. Invalid arguments anywhere write nothing; a
    CLOCKSKEW or invalid override of decision j is the whole reply, decisions 1 .. j-1 recorded.

  Errors, before the decision writes anything:
    "ERR invalid arguments"          an argument missing, not whole or out of range, a cost above a
                                     limit, a bad member, a repeated key, keys not matching the
                                     flags; in a batch, decisions of the wrong JSON types
    "CLOCKSKEW ..."                  now_ms is more than max_skew_ms behind a key's newest entry
                                     (bucketed: the start of its newest sub-window)
    "ERR invalid override at <key>"  an override hash without a known action, or a bad limit
]]

--- @include "rate_limit_v2/arguments.lua"
--- @include "rate_limit_v2/limits.lua"
--- @include "rate_limit_v2/overrides.lua"
--- @include "rate_limit_v2/log.lua"
--- @include "rate_limit_v2/recent_ids.lua"
--- @include "rate_limit_v2/bucketed_read.lua"
--- @include "rate_limit_v2/bucketed_write.lua"
--- @include "rate_limit_v2/limit_key.lua"
--- @include "rate_limit_v2/replies.lua"
--- @include "rate_limit_v2/decide.lua"
--- @include "rate_limit_v2/entry_points.lua"

redis.register_function('sliding_allow_v2', sliding_allow)
redis.register_function('sliding_allow_many_v2', sliding_allow_many)
redis.register_function{
  function_name = 'sliding_peek_v2',
  callback      = sliding_peek,
  flags         = {'no-writes'},
}
