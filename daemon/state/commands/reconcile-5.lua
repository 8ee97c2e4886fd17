--[=[
  Rebuilds what the campaign holds from a scan of its numbers, a chunk at a time. Ownership is recorded, never
  inferred: a number the daemon does not hold a record of is the sync's only when an open add batch of the sync claims
  it (a push whose answer was lost: the batch was written before the push); any other (in the campaign before the
  sync's first run, added by another key, the console, an upload or n8n) is recorded as not added by the daemon (`f`,
  and in `others`), and the plan leaves it alone. A held number whose record id changed was deleted and added again
  outside the daemon: it is no longer the record the sync added, and is recorded so too. Both are marked dirty so the
  next plan looks at them (a contact marked Do Not Call still takes its number out, whoever added it).

  Input:
    KEYS[1] have  KEYS[2] dirty  KEYS[3] claims  KEYS[4] batches  KEYS[5] others
    ARGV[1] sync id   ARGV[2] when the scan started (ms)
    ARGV[3..] triples: phone number, number id, variables' hash ('?' when the server does not list variables)
  Output:
    {adopted (the sync's: an open add batch claims it), updated, found (not added by the daemon)}
]=]
local have, dirty, claims, batches, others = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local sync, started = ARGV[1], tonumber(ARGV[2])
local adopted, updated, found = 0, 0, 0
-- Whether an open add batch of this sync claims the number: the sync wrote it down before pushing it.
local function pushed_by_sync(e)
  local id = redis.call('HGET', claims, e)
  if not id then return false end
  local raw = redis.call('HGET', batches, id)
  if not raw then return false end
  local b = cjson.decode(raw)
  return b.k == 'add' and b.s == sync
end
for i = 3, #ARGV, 3 do
  local e, id, h = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local held_raw = redis.call('HGET', have, e)
  if not held_raw then
    local record = {i = id, h = h, c = false, s = sync, t = started}
    if pushed_by_sync(e) then
      adopted = adopted + 1
    else
      record.f = 1
      redis.call('HSET', others, e, 'found')
      found = found + 1
    end
    redis.call('HSET', have, e, cjson.encode(record))
    redis.call('SADD', dirty, e)
  else
    local held = cjson.decode(held_raw)
    if held.i ~= id or held.h ~= h then
      if held.i ~= id and not held.f and not pushed_by_sync(e) then
        held.f = 1; held.c = false
        redis.call('HSET', others, e, 'replaced')
        found = found + 1
      end
      held.i = id; held.h = h; held.t = started
      redis.call('HSET', have, e, cjson.encode(held))
      redis.call('SADD', dirty, e)
      updated = updated + 1
    end
  end
end
return {adopted, updated, found}
