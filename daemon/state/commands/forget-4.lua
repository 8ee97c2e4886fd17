--[=[
  Forgets numbers the campaign no longer holds (a scan that started at ARGV[2] did not see them): each goes back to
  dirty to be planned again. A number recorded after the scan started, held by another sync, or claimed by an open
  batch (whose answer decides) is left alone. A number no sync added that left the campaign is forgotten too: a
  contact that wants it now gets it added, as the sync's.

  Input:
    KEYS[1] have  KEYS[2] claims  KEYS[3] dirty  KEYS[4] others
    ARGV[1] sync id   ARGV[2] when the scan started (ms)   ARGV[3..] phone numbers the scan did not see
  Output:
    how many were forgotten
]=]
local have, claims, dirty, others = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sync, started = ARGV[1], tonumber(ARGV[2])
local forgotten = 0
for i = 3, #ARGV do
  local e = ARGV[i]
  local held_raw = redis.call('HGET', have, e)
  if held_raw and redis.call('HEXISTS', claims, e) == 0 then
    local held = cjson.decode(held_raw)
    if held.s == sync and held.t < started then
      redis.call('HDEL', have, e)
      redis.call('HDEL', others, e)
      redis.call('SADD', dirty, e)
      forgotten = forgotten + 1
    end
  end
end
return forgotten
