-- line.lua, an include: the waiter line of modes lua and fenced (lock/line.go), shared by
-- line_acquire.lua and line_release.lua. The line is a list of waiter values in arrival order
-- (one waiter per process at a time: only the head of a process's own queue waits here), beside
-- a hash value -> "<deadline unix ms>:<grant ttl ms>", the grant TTL being the TTL a lock handed
-- to that waiter gets.
--! include queue_once.lua
--! include drop_dead.lua
--! requires line_key, waiters_key, counter_key, fenced, now
--! defines entry, leave, first_live, token, queue

-- entry is value's place in the line: its deadline (unix ms, a number) and its grant TTL (ms, as
-- written); nil when value is not in line.
local function entry(value)
  local e = redis.call('hget', waiters_key, value)
  if not e then
    return nil
  end
  return tonumber(string.match(e, '^(%d+)')), string.match(e, ':(%d+)$')
end

-- leave takes value, the first in line, off the line.
local function leave(value)
  redis.call('lpop', line_key)
  redis.call('hdel', waiters_key, value)
end

-- first_live drops the dead waiters at the head (drop_dead.lua) and returns the first live one,
-- false when none is left.
local function first_live()
  local function first()
    return redis.call('lindex', line_key, 0)
  end
  return drop_dead(first, entry, leave, now)
end

-- token is a new holder's token: the next of the counter for a fenced lock, 0 for lua.
local function token()
  if fenced == '1' then
    return redis.call('incr', counter_key)
  end
  return 0
end

-- queue puts value in line (once) until deadline, with grant_ttl; both keys live at least until
-- then.
local function queue(value, deadline, grant_ttl)
  queue_once(line_key, waiters_key, value, deadline .. ':' .. grant_ttl, tonumber(deadline) - now)
end
