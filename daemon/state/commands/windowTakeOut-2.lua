--[=[
  Takes numbers out of the campaign at their per-number cap (their number record still had a retry pending): each is
  kept in the taken-out hash until its cap passes, and marked dirty for the sync holding it, in one step, so that the
  plan that follows deletes it (and adds it to nowhere) while it is there.

  Input:
    KEYS[1] the window's taken-out hash (phone number -> when its cap passes, ms)
    KEYS[2] the dirty set of the sync holding these numbers
    ARGV[1..] pairs: phone number, when its cap passes (ms)
  Output:
    how many numbers were not taken out already
]=]
local added = 0
for i = 1, #ARGV, 2 do
  added = added + redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call('SADD', KEYS[2], ARGV[i])
end
return added
