--[=[
  Records what the dialer answered for a batch and closes it, in one step: the numbers the campaign now holds, the
  parked ones, the claims released, the batch and its in-flight mark deleted. Entries the answer did not settle go
  back to dirty, so the next plan looks at them again. Recording a batch that is gone (recorded already) does nothing.
  A number the dialer already held when the sync first sent it (it answered "duplicate") was not added by the sync: it
  is recorded as not added by the daemon (`f`, and in `others`), as a reconcile would have found it. One an earlier
  attempt of this batch added (its answer lost) is looked up before sending again and recorded as the sync's.

  Input:
    KEYS[1] have  KEYS[2] claims  KEYS[3] batches  KEYS[4] inflight  KEYS[5] parked  KEYS[6] dirty  KEYS[7] others
    ARGV[1] batch id   ARGV[2] now (ms)
    ARGV[3] outcome JSON: {created: [[e164, number id, 1 if it existed already]], rejected: [[e164, reason, code]],
            deleted: [e164], kept: [[e164, why]]}
    ARGV[4] the W3C traceparent of the span that sent the batch, or '' (tracing off): kept as `p` in each number
            added or parked, so a call's mirror write (or /ops) can link back to it
  Output:
    {pushed, deleted, rejected, kept}
]=]
local have, claims, batches, inflight, parked, dirty, others = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local batch_id, now, outcome = ARGV[1], tonumber(ARGV[2]), cjson.decode(ARGV[3])
local traceparent = ARGV[4] ~= '' and ARGV[4] or nil
local raw = redis.call('HGET', batches, batch_id)
if not raw then return {0, 0, 0, 0} end
local b = cjson.decode(raw)
local done = {}
local pushed, deleted, rejected, kept = 0, 0, 0, 0
local by = {}
for _, e in ipairs(b.e) do by[e[1]] = e end
for _, c in ipairs(outcome.created or {}) do
  local e = by[c[1]]
  if e and not done[c[1]] then
    local record = {i = c[2], h = e[4], c = e[2], s = b.s, t = now, p = traceparent}
    if c[3] == 1 then
      -- Its variables are whoever added it's, not the contact's: the hash is unknown.
      record.f = 1; record.h = '?'
      redis.call('HSET', others, c[1], 'duplicate')
    else
      redis.call('HDEL', others, c[1])
    end
    redis.call('HSET', have, c[1], cjson.encode(record))
    redis.call('HDEL', parked, c[1])
    done[c[1]] = true
    if c[3] ~= 1 then pushed = pushed + 1 end
  end
end
for _, r in ipairs(outcome.rejected or {}) do
  local e = by[r[1]]
  if e and not done[r[1]] then
    redis.call('HSET', parked, r[1], cjson.encode({r = r[2], code = r[3], c = e[2], t = now, p = traceparent}))
    done[r[1]] = true
    rejected = rejected + 1
  end
end
for _, x in ipairs(outcome.deleted or {}) do
  local e = by[x]
  if e and not done[x] then
    redis.call('HDEL', have, x)
    redis.call('HDEL', others, x)
    redis.call('HDEL', parked, x)
    if e[3] == 1 then redis.call('SADD', dirty, x) end
    done[x] = true
    deleted = deleted + 1
  end
end
for _, k in ipairs(outcome.kept or {}) do
  local e = by[k[1]]
  local held_raw = redis.call('HGET', have, k[1])
  if e and held_raw and not done[k[1]] then
    local held = cjson.decode(held_raw)
    held.k = k[2]
    if e[4] then held.x = e[4] end
    redis.call('HSET', have, k[1], cjson.encode(held))
    done[k[1]] = true
    kept = kept + 1
  end
end
for _, e in ipairs(b.e) do
  if not done[e[1]] then redis.call('SADD', dirty, e[1]) end
  redis.call('HDEL', claims, e[1])
end
redis.call('HDEL', batches, batch_id)
redis.call('HDEL', inflight, batch_id)
return {pushed, deleted, rejected, kept}
