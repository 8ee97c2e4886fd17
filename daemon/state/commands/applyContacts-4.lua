--[=[
  Writes mapped contacts (or deletions) and marks every phone number they touch dirty, for the next plan.
  Idempotent: a contact written again with the same phones and value changes nothing (a page applied twice after a
  crash is harmless). A contact marked Do Not Call (d in its value) is written like any other, and its phone numbers
  are counted in blocked; marking or unmarking it changes its value, so its numbers are planned again.

  Input:
    KEYS[1] contacts  hash: contact id -> "<phones, comma-separated>\n<value JSON {v: variables, h: hash, d: 1 if Do Not Call}>"
    KEYS[2] phones    hash: phone number -> contact ids holding it, newline-separated, first read first
    KEYS[3] dirty     set: phone numbers to plan
    KEYS[4] blocked   hash: phone number -> how many contacts holding it are marked Do Not Call (the campaign's:
                      every sync feeding it counts its own contacts there)
    ARGV    triples: contact id, phones (comma-separated), value JSON; an empty value deletes the contact
  Output:
    {changed, unchanged, removed}
]=]
--- @include "includes/owners"
local contacts, phones, dirty, blocked = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local function save(p, list)
  if #list == 0 then redis.call('HDEL', phones, p) else redis.call('HSET', phones, p, table.concat(list, '\n')) end
end
local function remove_owner(p, id)
  local out = {}
  for _, o in ipairs(owners(phones, p)) do if o ~= id then out[#out + 1] = o end end
  save(p, out)
end
local function add_owner(p, id)
  local list = owners(phones, p)
  for _, o in ipairs(list) do if o == id then return end end
  list[#list + 1] = id
  save(p, list)
end
-- Counts a marked contact's phone numbers in (by 1) or out (by -1) of blocked.
local function block(list, by)
  for _, x in ipairs(list) do
    if redis.call('HINCRBY', blocked, x, by) <= 0 then redis.call('HDEL', blocked, x) end
  end
end
local function marked(value) return cjson.decode(value).d ~= nil end
local changed, unchanged, removed = 0, 0, 0
for i = 1, #ARGV, 3 do
  local id, p, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local old_raw = redis.call('HGET', contacts, id)
  local old_p, old_marked = {}, false
  if old_raw then
    local nl = string.find(old_raw, '\n', 1, true)
    for x in string.gmatch(string.sub(old_raw, 1, nl - 1), '[^,]+') do old_p[#old_p + 1] = x end
    old_marked = marked(string.sub(old_raw, nl + 1))
  end
  if value == '' then
    if old_raw then
      for _, x in ipairs(old_p) do remove_owner(x, id); redis.call('SADD', dirty, x) end
      redis.call('HDEL', contacts, id)
      if old_marked then block(old_p, -1) end
      removed = removed + 1
    end
  elseif old_raw and old_raw == (p .. '\n' .. value) then
    unchanged = unchanged + 1
  else
    redis.call('HSET', contacts, id, p .. '\n' .. value)
    local new_p, new_set, old_set = {}, {}, {}
    for x in string.gmatch(p, '[^,]+') do new_p[#new_p + 1] = x; new_set[x] = true end
    if old_marked then block(old_p, -1) end
    if marked(value) then block(new_p, 1) end
    for _, x in ipairs(old_p) do old_set[x] = true end
    for _, x in ipairs(old_p) do
      if not new_set[x] then remove_owner(x, id) end
      redis.call('SADD', dirty, x)
    end
    for _, x in ipairs(new_p) do
      if not old_set[x] then add_owner(x, id) end
      redis.call('SADD', dirty, x)
    end
    changed = changed + 1
  end
end
return {changed, unchanged, removed}
