--[=[
  Admits numbers to a campaign's calling window at once: where each callee is (the evidence /ops shows, ending with
  its window group) and the groups the campaign now holds, so that a crash never leaves a number recorded in a group
  the campaign's window does not count, nor a group counted for no number.

  Input:
    KEYS[1] the window's evidence hash (phone number -> evidence)
    KEYS[2] the window's groups set
    ARGV[1] n, the number of phone numbers
    ARGV[2 .. 2n+1] phone number, evidence (pairs)
    ARGV[2n+2 ..] window groups (`<zones>|<states>`)
  Output:
    how many groups were new
]=]
local n = tonumber(ARGV[1])
for i = 2, 2 * n, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
local added = 0
for i = 2 * n + 2, #ARGV do added = added + redis.call('SADD', KEYS[2], ARGV[i]) end
return added
