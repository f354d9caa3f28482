-- Fair lock release (RedissonFairLock.unlockInnerAsync): as the reentrant release, but the
-- wake-up goes only to the first waiter in line, on its own channel
-- "redisson_lock__channel:{<name>}:<field>". Dead waiters at the head are dropped first.
-- KEYS[1] lock name; KEYS[2] queue; KEYS[3] deadlines; KEYS[4] channel prefix
-- "redisson_lock__channel:{<name>}"; ARGV[1] unlock message ("0"); ARGV[2] lease in ms;
-- ARGV[3] field "<instance-id>:<owner>"; ARGV[4] now, unix ms.
-- ARGV[5] handover prefix "<instance-id>:" of the releasing process ('' : none), ARGV[6] the
-- lease in ms and ARGV[7] the thread wait in ms to hand the lock over with, ARGV[8] the message
-- that tells a waiter of another process it was handed the lock; KEYS[5] the alive hash
-- (fair_alive.lua); KEYS[6] the grant hash; KEYS[7] the lag hash (fair_lag.lua).
-- Returns nil when the field is not there (not held by this owner); else {0, ''} when still held
-- (nested), {1, first} when deleted and the first waiter (its field, '' if none) told, {2, first}
-- when handed over: the first waiter waits in the releasing process (its field starts with
-- ARGV[5]), so the lock is taken for it here exactly as its own acquire would take it (first in
-- line, the others move up), and it is told in that process instead of by a PUBLISH. Waiters of
-- other processes that take a handover (their field is in the grant hash, with the TTL the lock
-- gets: min(their lease, their wait), so a dead one holds the line for its wait at most) get it
-- the same way, told by ARGV[8] on their channel: {3, first}. A Redisson client is never in the
-- grant hash and is told with the unlock message, as Redisson's own release tells it.
-- release_hold.lua, fair_lag.lua and fair_drop_dead.lua run before this; every way out saves the
-- lag.

local released = release_hold(KEYS[1], ARGV[3], ARGV[2])
if released == nil then
  -- Not ours (it expired, or was never taken). If the lock is free, wake the first waiter anyway,
  -- so the line does not wait for a release that will never come.
  if head ~= false and redis.call('exists', KEYS[1]) == 0 then
    redis.call('publish', KEYS[4] .. ':' .. head, ARGV[1])
  end
  save_lag()
  return nil
end
if released == 0 then
  save_lag()
  return {0, ''}
end
local first = head
if first == false then
  save_lag()
  return {1, ''}
end
local prefix = ARGV[5] or ''
-- Taken for the first waiter, exactly as its own acquire would take it, when it waits here or is
-- listed in the grant hash (looked up only for a waiter elsewhere).
if prefix ~= '' and string.sub(first, 1, #prefix) == prefix then
  take_lock(first, tonumber(ARGV[7]), ARGV[6])
  return {2, first}
end
local ttl = redis.call('hget', GRANT, first)
if ttl then
  take_lock(first, tonumber(ARGV[7]), ttl)
  redis.call('publish', KEYS[4] .. ':' .. first, ARGV[8])
  return {3, first}
end
save_lag()
redis.call('publish', KEYS[4] .. ':' .. first, ARGV[1])
return {1, first}
