--[=[
  The contacts holding a phone number, stored newline-separated in the phones hash (a CRM id holds no newline).
]=]
local function owners(phones, p)
  local v = redis.call('HGET', phones, p)
  local list = {}
  if v then for id in string.gmatch(v, '[^\n]+') do list[#list + 1] = id end end
  return list
end
