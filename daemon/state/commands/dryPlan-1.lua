--[=[
  What plan would do for the given phone numbers, writing nothing: the same decision (includes/decide) against what
  the campaign holds, for a desired state read in full by `sync --dry-run`.

  Input:
    KEYS[1] have      hash: phone number -> held record JSON (the campaign's)
    ARGV[1] sync id   ARGV[2] onLeave (delete|keep)
    ARGV[3..] quadruples: phone number, contact that wants it ('' for none), variables' hash ('' when no contact
              wants it), 1 if a contact holding it is marked Do Not Call else 0
  Output:
    flat list of phone number, action, contact held ('' when none), for every number with an action that changes
    the campaign (add, replace, delete)
]=]
--- @include "includes/decide"
local have = KEYS[1]
local sync, on_leave = ARGV[1], ARGV[2]
local out = {}
for i = 3, #ARGV, 4 do
  local e, owner, hash, blocked = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3] == '1'
  local held_raw = redis.call('HGET', have, e)
  local held = held_raw and cjson.decode(held_raw) or nil
  local action = decide(held, owner ~= '' and owner or nil, hash ~= '' and hash or nil, sync, on_leave, blocked)
  if action == 'add' or action == 'replace' or action == 'delete' then
    out[#out + 1] = e
    out[#out + 1] = action
    out[#out + 1] = (held and type(held.c) == 'string') and held.c or ''
  end
end
return out
