-- line.lua, an include: the one line in Redis, of modes lua, fenced and reentrant (lock/line.go,
-- lock/nomination.go). It holds who waits for the lock across processes, in the order they first
-- failed to take it, one member per process at a time (only the head of a process's own queue
-- waits here). What a release does for the first live member is the kind's: lua and fenced write
-- the member, a waiter's value "<instance-id>:<uuid>", into the lock (hand_over.lua); reentrant,
-- whose lock is Redisson's hash, tells the member, a process id, to try (nominate.lua). Beside
-- the list, a hash member -> "<deadline unix ms>:<grant ttl ms>", the grant TTL being the TTL a
-- lock handed to that member gets (0 where the release only nominates).
--! include queue_once.lua
--! include drop_dead.lua
--! requires line_key, waiters_key, now
--! defines entry, leave, remove, first_live, queue

-- entry is member's place in the line: its deadline (unix ms, a number) and its grant TTL (ms,
-- as written); nil when member is not in line.
local function entry(member)
  local e = redis.call('hget', waiters_key, member)
  if not e then
    return nil
  end
  return tonumber(string.match(e, '^(%d+)')), string.match(e, ':(%d+)$')
end

-- leave takes member, the first in line, off the line.
local function leave(member)
  redis.call('lpop', line_key)
  redis.call('hdel', waiters_key, member)
end

-- remove takes member off the line wherever it stands (a waiter that gave up).
local function remove(member)
  if redis.call('hdel', waiters_key, member) == 1 then
    redis.call('lrem', line_key, 1, member)
  end
end

-- first_live drops the dead members at the head (drop_dead.lua) and returns the first live one,
-- false when none is left.
local function first_live()
  local function first()
    return redis.call('lindex', line_key, 0)
  end
  return drop_dead(first, entry, leave, now)
end

-- queue puts member in line (once: a member already there keeps its place) until deadline, with
-- grant_ttl; both keys live at least until then.
local function queue(member, deadline, grant_ttl)
  queue_once(line_key, waiters_key, member, deadline .. ':' .. grant_ttl, tonumber(deadline) - now)
end
