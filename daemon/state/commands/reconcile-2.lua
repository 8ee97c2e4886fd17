--[=[
  Rebuilds what the campaign holds from a scan of its numbers, a chunk at a time: numbers the daemon did not know are
  adopted (contact unknown until the next plan matches it), numbers whose id or variables differ are updated; both
  are marked dirty so the next plan checks them against what the sync wants.

  Input:
    KEYS[1] have  KEYS[2] dirty
    ARGV[1] sync id   ARGV[2] when the scan started (ms)
    ARGV[3..] triples: phone number, number id, variables' hash ('?' when the server does not list variables)
  Output:
    {adopted, updated}
]=]
local have, dirty = KEYS[1], KEYS[2]
local sync, started = ARGV[1], tonumber(ARGV[2])
local adopted, updated = 0, 0
for i = 3, #ARGV, 3 do
  local e, id, h = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local held_raw = redis.call('HGET', have, e)
  if not held_raw then
    redis.call('HSET', have, e, cjson.encode({i = id, h = h, c = false, s = sync, t = started}))
    redis.call('SADD', dirty, e)
    adopted = adopted + 1
  else
    local held = cjson.decode(held_raw)
    if held.i ~= id or held.h ~= h then
      held.i = id; held.h = h; held.t = started
      redis.call('HSET', have, e, cjson.encode(held))
      redis.call('SADD', dirty, e)
      updated = updated + 1
    end
  end
end
return {adopted, updated}
