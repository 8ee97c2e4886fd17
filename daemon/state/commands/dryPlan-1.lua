--[=[
  What plan would do for the given phone numbers, writing nothing: the same decision (includes/decide) against what
  the campaign holds, for a desired state read in full by `sync --dry-run`.

  Input:
    KEYS[1] have      hash: phone number -> held record JSON (the campaign's)
    ARGV[1] sync id   ARGV[2] onLeave (delete|keep)   ARGV[3] owns (1|0, as plan's)
    ARGV[4..] quintuples: phone number, contact that wants it ('' for none), variables' hash ('' when no contact
              wants it), 1 if a contact holding it is marked Do Not Call else 0, and what the campaign holds for it
              as the start will know it after reading the campaign: '' (the held record in Redis), '-' (none: the
              campaign no longer holds it) or a held record JSON (a number the daemon has no record of)
  Output:
    flat list of phone number, action, contact held ('' when none), for every number with an action that changes
    the campaign (add, replace, delete) and every number it keeps that no sync of the daemon added ('others')
]=]
--- @include "includes/decide"
local have = KEYS[1]
local sync, on_leave, owns = ARGV[1], ARGV[2], ARGV[3] == '1'
local out = {}
for i = 4, #ARGV, 5 do
  local e, owner, hash, blocked = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3] == '1'
  local as_known = ARGV[i + 4]
  local held_raw = nil
  if as_known == '' then held_raw = redis.call('HGET', have, e) elseif as_known ~= '-' then held_raw = as_known end
  local held = held_raw and cjson.decode(held_raw) or nil
  local action = decide(held, owner ~= '' and owner or nil, hash ~= '' and hash or nil, sync, on_leave, blocked, owns)
  if not action and held and held.f and not owns then action = 'others' end
  if action == 'add' or action == 'replace' or action == 'delete' or action == 'others' then
    out[#out + 1] = e
    out[#out + 1] = action
    out[#out + 1] = (held and type(held.c) == 'string') and held.c or ''
  end
end
return out
