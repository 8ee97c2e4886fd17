--[=[
  Reserves the next slot of a fixed spacing and says how long to wait for it (GCRA: after a pause, up to `burst`
  requests may go at once, so slots lost to a gap are made up). The clock is Redis's own, so processes on several
  machines agree.

  Input:
    KEYS[1] the gate: the theoretical arrival time of the next request (ms)
    ARGV[1] spacing (ms)   ARGV[2] burst
  Output:
    { ms to wait before sending, the time (Redis's clock, ms) the request may go: its slot }
]=]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now)
local wait = math.max(0, tat - now - burst * interval)
redis.call('SET', KEYS[1], tat + interval, 'PX', math.ceil(tat + interval - now) + 1000)
return { wait, now + wait }
