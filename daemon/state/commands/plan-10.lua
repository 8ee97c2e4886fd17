--[=[
  Decides, for each given dirty phone number, what the campaign needs (includes/decide; a holder marked Do Not Call
  blocks it, and so does being taken out at a per-number cap), claims the numbers it acts on and writes the batches, all at once: two planners can never claim one
  number, and a crash after this leaves batches that the next run finds and queues. A number claimed by an open
  batch stays dirty (its answer decides).
  With `whole` set (a run between two pages of its read, or draining a burst of webhooks), adds and deletions that do
  not fill a batch are not written: they stay dirty, unclaimed, and are returned, so that the next page (or the run's
  final plan) sends them in a full batch; each dialer request of a rate-limited key then carries a whole batch, not a
  page's (or a webhook's) remainder. A replace is a deletion then (its add follows once the deletion is recorded).

  Input:
    KEYS[1] contacts  KEYS[2] phones  KEYS[3] dirty       (the sync's)
    KEYS[4] have      hash: phone number -> held record JSON (the campaign's)
    KEYS[5] claims    hash: phone number -> batch id
    KEYS[6] batches   hash: batch id -> batch JSON {k add|del, s sync, r run, t ms, e entries, p traceparent (tracing on)}
    KEYS[7] counter   the campaign's batch counter
    KEYS[8] blocked   hash: phone number -> how many contacts holding it are marked Do Not Call (the campaign's)
    KEYS[9] taken out hash: phone number -> when its cap passes (ms): taken out at its cap with a retry pending (the
                      campaign's window's); blocked while it is there (windowRelease takes it out when the cap passes,
                      by the window's clock, which may be the dialer's and not this one's)
    KEYS[10] others   hash: phone number -> how the campaign came to hold it without a sync adding it (the campaign's)
    ARGV[1] sync id   ARGV[2] onLeave (delete|keep)   ARGV[3] max entries a batch   ARGV[4] now (ms)   ARGV[5] run id
    ARGV[6] whole (1|0)   ARGV[7] the W3C traceparent of the planning span, or '' (tracing off): kept as the batch's `p`,
    so that a batch queued again after a crash (resumeBatches) links back to the plan   ARGV[8] owns (1|0): the sync
    owns the campaign alone (ownsCampaign), so numbers no sync added are its own to replace or delete
    ARGV[9..] phone numbers, each after the Do Not Call lists' verdict on it (dnc/gate.ts VERDICT_MARK): nothing (clear),
    '!' (the company's own list holds it: blocked like a Do Not Call mark), '~' (a registry or state list holds it:
    blocked unless the contact wanting it is exempt, its value's x: until when, ms, -1 until withdrawn), '?' (a list
    cannot vouch for it: an exempt contact's number goes on; otherwise it is not added nor replaced, and is kept out
    until a new copy can vouch for it; a number held goes on being held, and may leave)
  Output:
    {batch ids, skipped (claimed), planned (entries), held (whole: the adds and deletions left dirty for a later batch),
     added (flat: phone, contact, the exemption that let it in or '', until or '' of each add written),
     kept out (the marked numbers a contact wanted that were not let in: held by a list, or waiting for one to vouch),
     released (the other marked numbers decided: let in by an exemption, or wanted by no contact)}
  Entries: add {e164, contact, variables, hash}; delete {e164, number id, then add 0|1, wanted hash or false}.
]=]
--- @include "includes/owners"
--- @include "includes/decide"
local contacts, phones, dirty, have, claims, batches, counter, blocked, taken_out, others = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local sync, on_leave, max_batch, now, run, whole = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6] == '1'
local traceparent = ARGV[7] ~= '' and ARGV[7] or nil
local owns = ARGV[8] == '1'
local adds, dels, ids, added = {}, {}, {}, {}
local exempted, kept_out, released = {}, {}, {}
local skipped, planned = 0, 0
local function flush(kind, list)
  if #list == 0 then return end
  local id = sync .. '.' .. redis.call('INCR', counter)
  redis.call('HSET', batches, id, cjson.encode({k = kind, s = sync, r = run, t = now, e = list, p = traceparent}))
  for _, e in ipairs(list) do redis.call('HSET', claims, e[1], id) end
  planned = planned + #list
  ids[#ids + 1] = id
  if kind == 'add' then
    for _, a in ipairs(list) do
      local x = exempted[a[1]]
      added[#added + 1] = a[1]; added[#added + 1] = a[2]
      added[#added + 1] = x and x[1] or ''; added[#added + 1] = x and tostring(x[2]) or ''
    end
  end
end
for i = 9, #ARGV do
  local e = ARGV[i]
  local mark = string.sub(e, 1, 1)
  if mark == '!' or mark == '~' or mark == '?' then e = string.sub(e, 2) else mark = '' end
  if redis.call('SISMEMBER', dirty, e) == 1 then
    if redis.call('HEXISTS', claims, e) == 1 then
      skipped = skipped + 1
    else
      local kept_before = #kept_out
      redis.call('SREM', dirty, e)
      -- A number any holder marks Do Not Call, or taken out at its cap, is wanted by nobody; otherwise its first holder wants it.
      local by_mark = redis.call('HEXISTS', blocked, e) == 1 or redis.call('HEXISTS', taken_out, e) == 1
      local is_blocked = by_mark or mark == '!'
      local owner = (not is_blocked) and owners(phones, e)[1] or nil
      local value = nil
      if owner then
        local raw = redis.call('HGET', contacts, owner)
        if raw then value = cjson.decode(string.sub(raw, string.find(raw, '\n', 1, true) + 1)) end
      end
      -- The Do Not Call lists: an exemption of the contact wanting the number lets it past the registry and state lists.
      local unvouched = false
      if mark == '~' or mark == '?' then
        local x = value and tonumber(value.x)
        if x and (x == -1 or x > now) then
          exempted[e] = {value.w or 'exempt', x}
        elseif mark == '~' then
          if value then kept_out[#kept_out + 1] = e end
          is_blocked, owner, value = true, nil, nil
        else
          unvouched = true
        end
      elseif mark == '!' and not by_mark and owners(phones, e)[1] then
        -- (a number a Do Not Call mark or a cap holds out is counted there, not as the company list's)
        kept_out[#kept_out + 1] = e
      end
      local held_raw = redis.call('HGET', have, e)
      local held = held_raw and cjson.decode(held_raw) or nil
      if owns and held and held.f then
        -- The sync owns the campaign alone: a number no sync added is taken over, as the sync's from now on.
        held.f = nil
        redis.call('HSET', have, e, cjson.encode(held))
        redis.call('HDEL', others, e)
      end
      local action = decide(held, owner, value and value.h, sync, on_leave, is_blocked, owns)
      if unvouched and (action == 'add' or action == 'replace') then
        -- No list can vouch for it: it waits, kept out, for a copy that can (a new copy plans every number kept out
        -- again: sync/dnc-check.ts); what the campaign holds of it stays.
        kept_out[#kept_out + 1] = e
        action = nil
      end
      if action == 'add' then
        adds[#adds + 1] = {e, owner, value.v, value.h}
      elseif action == 'replace' then
        dels[#dels + 1] = {e, held.i, 1, value.h}
      elseif action == 'delete' then
        dels[#dels + 1] = {e, held.i, 0, false}
      elseif action == 'adopt' then
        held.c = owner; held.k = nil; held.x = nil; held.h = value.h
        redis.call('HSET', have, e, cjson.encode(held))
      elseif action == 'own' then
        held.c = owner
        redis.call('HSET', have, e, cjson.encode(held))
      elseif action == 'keep' then
        held.k = KEEP_NOTE
        redis.call('HSET', have, e, cjson.encode(held))
      end
      if mark ~= '' and #kept_out == kept_before then released[#released + 1] = e end
      if #adds >= max_batch then flush('add', adds); adds = {} end
      if #dels >= max_batch then flush('del', dels); dels = {} end
    end
  end
end
local held = {}
if whole then
  -- Deciding an add or a deletion changed nothing but the dirty mark: put it back, and the number is planned again later.
  for _, list in ipairs({dels, adds}) do
    for _, e in ipairs(list) do
      redis.call('SADD', dirty, e[1])
      held[#held + 1] = e[1]
    end
  end
else
  flush('del', dels)
  flush('add', adds)
end
return {ids, skipped, planned, held, added, kept_out, released}
