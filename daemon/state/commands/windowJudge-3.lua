--[=[
  Replaces a campaign window's judgement of the numbers it holds that the daemon did not admit, at once: their groups,
  their evidence, and the judgement's meta fields, so that the window never counts the groups of one judgement with
  the evidence or the baseline of another.

  Input:
    KEYS[1] the window's held set (window groups)
    KEYS[2] the window's foreign hash (phone number -> evidence)
    KEYS[3] the window's meta hash
    ARGV[1] judgedAt (ms)
    ARGV[2] baseline: the records the daemon did not account for when the judgement began
    ARGV[3] unjudged: how many held numbers have no zone
    ARGV[4] n, the number of phone numbers
    ARGV[5 .. 2n+4] phone number, evidence (pairs)
    ARGV[2n+5 ..] window groups
  Output:
    how many groups are held
]=]
redis.call('DEL', KEYS[1], KEYS[2])
local n = tonumber(ARGV[4])
for i = 5, 2 * n + 3, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
for i = 2 * n + 5, #ARGV do redis.call('SADD', KEYS[1], ARGV[i]) end
redis.call('HSET', KEYS[3], 'judgedAt', ARGV[1], 'baseline', ARGV[2], 'unjudged', ARGV[3], 'current', '1')
redis.call('HDEL', KEYS[3], 'judgeError')
return redis.call('SCARD', KEYS[1])
