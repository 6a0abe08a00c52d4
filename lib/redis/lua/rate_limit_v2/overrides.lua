--[[
  overrides: a limited key's override, a hash in its slot (lib/core/override-keys.ts names it) with
  field "action" and, for "limit", field "limit" (0 to 1e15); it expires by its own TTL. A limit's
  `kind` is the reply's override_i (the library's header says what each does; block: effective 0).
    read_overrides(limits)                  sets the kind and effective limit of each limit with an
                                            override key; returns an error reply for a malformed
                                            override, else nil
    until_override_ends(lim)                -> ms the override still refuses for: its remaining TTL,
                                            or window_ms when it has none
]]

local OVERRIDE_KINDS = { limit = 1, exempt = 2, block = 3 }
local EXEMPT, BLOCK  = 2, 3

-- Called only when one of the call's override keys exists (entry_points asks once, with EXISTS).
local function read_overrides(limits)
  for i = 1, #limits do
    local lim = limits[i]
    if lim.has_override then
      local fields = call('HMGET', lim.override_key, 'action', 'limit')
      if fields[1] then
        local kind  = OVERRIDE_KINDS[fields[1]]
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

local function until_override_ends(lim)
  local ttl = call('PTTL', lim.override_key)
  return ttl < 0 and lim.window_ms or ttl
end
