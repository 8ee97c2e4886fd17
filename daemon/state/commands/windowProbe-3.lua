--[=[
  What the daemon itself accounts for in a campaign's number records, read at once so that a batch answered between
  two reads is counted exactly once: the records it holds, and the adds and deletions of batches sent whose answer is
  not recorded yet (each may or may not have reached the dialer).

  Input:
    KEYS[1] the campaign's held hash (phone number -> held record)
    KEYS[2] the campaign's in-flight hash (batch id -> when it was sent)
    KEYS[3] the campaign's batches hash (batch id -> batch JSON)
  Output:
    { records held, adds in flight, deletions in flight }
]=]
local adds, dels = 0, 0
local ids = redis.call('HKEYS', KEYS[2])
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[3], id)
  if raw then
    local b = cjson.decode(raw)
    local n = 0
    if type(b.e) == 'table' then for _ in pairs(b.e) do n = n + 1 end end
    if b.k == 'add' then adds = adds + n else dels = dels + n end
  end
end
return { redis.call('HLEN', KEYS[1]), adds, dels }
