--[=[
  Releases the numbers held at their per-number cap whose hold has passed: taken out of the set and counted in one
  step, so that of several processes checking at once exactly one sees each number released.

  Input:
    KEYS[1] the window's capped set (phone number scored by when it may be planned again, ms)
    ARGV[1] now (ms)
  Output:
    how many numbers were released
]=]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for i = 1, #due, 1000 do
  redis.call('ZREM', KEYS[1], unpack(due, i, math.min(i + 999, #due)))
end
return #due
