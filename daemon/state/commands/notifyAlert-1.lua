--[=[
  One alert's step across the daemon's processes (notify/): what one evaluation found of it, applied to its record
  atomically, so that however many processes evaluate, each event is one message. An alert seen for the first time
  is pending; seen again by a later evaluation it fires (its first message); while it fires a message is repeated
  every `repeatEvery`; once it is no longer seen it is resolved (one message). A pending alert that clears sends
  nothing. A message to send is kept in the record (`send`) until the caller has queued it ('queued'), so a process
  that dies between the two leaves it to the next evaluation.

  Input:
    KEYS[1] the alerts hash (fingerprint -> record JSON)
    ARGV[1] the alert's fingerprint
    ARGV[2] what the evaluation found: 'firing', 'clear', or 'queued' (the message of seq ARGV[4] was queued)
    ARGV[3] now (ms)
    ARGV[4] firing: repeatEvery (ms); queued: the seq queued
    ARGV[5] firing: the alert as evaluated, JSON {kind, sync, campaign, reason, fix?, docs, since?} (`since`: when the
            state began, if the daemon knows; taken when the alert fires, kept while it fires)
  Output:
    the record JSON when it now holds a message to send (its `send`: {seq, status, at, repeat}), else ''
]=]
local raw = redis.call('HGET', KEYS[1], ARGV[1])
local rec = raw and cjson.decode(raw) or nil
local now = tonumber(ARGV[3])
local function save() redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec)) end
local function send(status, is_repeat)
  rec.seq = rec.seq + 1
  rec.sent = now
  rec.send = { seq = rec.seq, status = status, at = now, ['repeat'] = is_repeat }
  save()
  return cjson.encode(rec)
end

if ARGV[2] == 'queued' then
  if rec and type(rec.send) == 'table' and rec.send.seq == tonumber(ARGV[4]) then
    if rec.status == 'resolved' then
      redis.call('HDEL', KEYS[1], ARGV[1])
    else
      rec.send = nil
      save()
    end
  end
  return ''
end

if ARGV[2] == 'clear' then
  if not rec or rec.status == 'resolved' then return '' end
  if rec.status == 'pending' then
    redis.call('HDEL', KEYS[1], ARGV[1])
    return ''
  end
  rec.status = 'resolved'
  return send('resolved', false)
end

local found = cjson.decode(ARGV[5])
-- A resolution not queued yet is sent first; the alert starts again at a later evaluation.
if rec and rec.status == 'resolved' then return '' end
if not rec then
  rec = { kind = found.kind, sync = found.sync, campaign = found.campaign, status = 'pending', first = now, seq = 0 }
end
rec.reason = found.reason
rec.fix = found.fix
rec.docs = found.docs
rec.seen = now
if rec.status == 'pending' then
  if now <= rec.first then
    save()
    return ''
  end
  rec.status = 'firing'
  rec.since = found.since or rec.first
  return send('firing', false)
end
if now - rec.sent >= tonumber(ARGV[4]) then return send('firing', true) end
save()
return ''
