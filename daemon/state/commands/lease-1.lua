--[=[
  A lease one holder at a time has, across processes: taken when free (or expired), renewed by its holder, released
  only by its holder. A holder that dies lets it lapse after the time it was last taken or renewed for.

  Input:
    KEYS[1] the lease
    ARGV[1] the holder's token
    ARGV[2] ms to hold it from now; 0 to release it
  Output:
    {'', 0} when the holder has it (taken, renewed) or has let it go;
    otherwise {the token of the one who holds it, ms until it lapses}
]=]
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return { cur, math.max(redis.call('PTTL', KEYS[1]), 0) } end
if tonumber(ARGV[2]) == 0 then
  if cur then redis.call('DEL', KEYS[1]) end
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return { '', 0 }
