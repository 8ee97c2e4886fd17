--[=[
  Records that a process opened the Redis state: its state version, its package version and when, unless a process
  of a newer state version has written the record meanwhile (which this process must not start on, and must not
  write back over).

  Input:
    KEYS[1] the state version hash (`version`, `writtenBy`, `at`)
    ARGV[1] the state version the process reads and writes
    ARGV[2] its package version
    ARGV[3] now (ISO time)
  Output:
    {0, ''} when recorded; {the newer state version, the package version that wrote it} otherwise
]=]
local found = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if found > tonumber(ARGV[1]) then return { found, redis.call('HGET', KEYS[1], 'writtenBy') or '' } end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'writtenBy', ARGV[2], 'at', ARGV[3])
return { 0, '' }
