--[=[
  What the campaign needs for one phone number, decided from what it holds and what the sync wants. Shared by
  plan (which acts on it) and dryPlan (which only reports it), so a dry run can never disagree with a real plan.

  held:  the held record of the phone number (decoded JSON: i number id, h variables' hash, c contact, s sync,
         k why it is kept, x the hash a replacement was refused for, f set when no sync of the daemon added it:
         the campaign held it before, or another key, the console or an upload added it), or nil
  owner: the contact that wants it, or nil
  hash:  the hash of the variables that contact wants, or nil when no contact of the sync wants it
  blocked: true when a contact holding the number (of any sync feeding the campaign) is marked Do Not Call:
         whatever the others want, whatever onLeave says and whichever sync added it, the number leaves the campaign
         (unless a final status keeps it: it was dialed) and is not added
  owns:  the sync owns the campaign alone (its configuration's ownsCampaign): a number no sync added (f) is taken
         as the sync's own; without it such a number is left as it is (never replaced, deleted or taken over)
  Returns one of:
    nil        nothing to do
    'add'      add the number
    'replace'  delete the number and add it again with new variables
    'delete'   delete the number (it left the selection, onLeave delete; or Do Not Call)
    'keep'     it left the selection but onLeave is keep: note why it stays (KEEP_NOTE)
    'adopt'    the campaign already holds it as wanted: take it (contact, hash) and clear notes
    'own'      a replacement was refused for these variables; only its contact changes
]=]
local KEEP_NOTE = 'left the selection; kept (onLeave: keep)'
local function decide(held, owner, hash, sync, on_leave, blocked, owns)
  if blocked then
    -- a note other than onLeave's is a refused deletion: its status is final (it was dialed), so it stays
    if held and (not held.k or held.k == KEEP_NOTE) then return 'delete' end
    return nil
  end
  if held and held.f and not owns then
    return nil -- not added by a sync of this daemon: the operator's, kept as it is (still held to the window)
  end
  if held and held.s ~= sync then
    return nil -- another sync holds this number in the campaign: the first one keeps it
  end
  if hash and not held then return 'add' end
  if hash and held then
    if held.h == hash or held.h == '?' then
      if held.c ~= owner or held.k or held.x or held.h == '?' then return 'adopt' end
      return nil
    end
    if held.x == hash then
      -- replacing it with these values was refused (its status is final): nothing to do until they change
      if held.c ~= owner then return 'own' end
      return nil
    end
    return 'replace'
  end
  if held and not held.k then
    if on_leave == 'delete' then return 'delete' end
    return 'keep'
  end
  return nil
end
