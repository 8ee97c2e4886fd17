--[=[
  Releases the numbers held at their per-number cap whose hold has passed: taken out of the set (and of the taken-out
  hash, marked dirty so that the next plan adds them again) and counted in one step, so that of several processes
  checking at once exactly one sees each number released.

  Input:
    KEYS[1] the window's capped set (phone number scored by when it may be planned again, ms)
    KEYS[2] the window's taken-out hash (phone number -> when its cap passes, ms)
    KEYS[3] the dirty set of the sync whose window this is
    ARGV[1] now (ms)
  Output:
    how many numbers were released
]=]
local now = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local released = {}
for i = 1, #due, 1000 do
  redis.call('ZREM', KEYS[1], unpack(due, i, math.min(i + 999, #due)))
end
for _, e in ipairs(due) do released[e] = true end
-- Few numbers are taken out at once (those at their cap with a retry pending): read whole.
local out = redis.call('HGETALL', KEYS[2])
local count = #due
for i = 1, #out, 2 do
  if tonumber(out[i + 1]) <= now then
    redis.call('HDEL', KEYS[2], out[i])
    redis.call('SADD', KEYS[3], out[i])
    if not released[out[i]] then count = count + 1 end
  end
end
return count
