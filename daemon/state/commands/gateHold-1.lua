--[=[
  Nobody passes the gate for a while (a 429 said to wait): moves its next arrival time to now + ARGV[1], never back.

  Input:
    KEYS[1] the gate
    ARGV[1] ms to hold
  Output:
    0
]=]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local until_ = now + tonumber(ARGV[1])
if until_ > tat then redis.call('SET', KEYS[1], until_, 'PX', tonumber(ARGV[1]) + 1000) end
return 0
