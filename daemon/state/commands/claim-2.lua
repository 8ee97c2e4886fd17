--[=[
  Claims a batch for the attempt about to send it, or renews the claim just before each request. The in-flight mark
  names the attempt that owns the batch and when it last claimed it, so two attempts of one batch running at once (a
  push job taken again while its first run still goes on, as after a failover that lost the job's lock) cannot both
  send it: the second finds the first's claim and stands down. An owner that has not renewed its claim for ARGV[4] ms
  (half the job lock's life: it would have renewed its lock meanwhile) is taken to have died, and the attempt that saw
  it when it started (and looked up what it added) takes the batch over.

  Input:
    KEYS[1] the in-flight marks (batch id -> "owner|ms")
    KEYS[2] the open batches
    ARGV[1] the batch id
    ARGV[2] this attempt's token
    ARGV[3] the owner this attempt saw when it started, or '' when it saw none
    ARGV[4] ms after its last claim an owner is taken to have died
  Output:
    {'', 0} when the batch is now this attempt's (free, already its own, or taken over);
    {'', -1} when the batch is gone;
    otherwise {the owner that holds it, ms until it may be taken over}
]=]
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return { '', -1 } end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local owner, at = string.match(cur, '^(.*)|(%d+)$')
  -- A mark written before claims named their owner holds a time only: an attempt long gone.
  if not owner then owner, at = cur, 0 end
  if owner ~= ARGV[2] then
    local left = tonumber(at) + tonumber(ARGV[4]) - now
    if owner ~= ARGV[3] or left > 0 then return { owner, math.max(left, 0) } end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. '|' .. now)
return { '', 0 }
