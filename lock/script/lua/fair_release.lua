-- Fair lock release (NewFair; RedissonFairLock.unlockInnerAsync): as the reentrant release
-- (release_hold.lua), but after the dead waiters at the head are dropped (fair_queue.lua) the
-- wake-up goes only to the first waiter in line, on its own channel "<channel_prefix>:<field>".
-- When the first waiter waits in the releasing process (its field starts with handover_prefix),
-- the lock is taken for it here exactly as its own acquire would take it (first in line, the
-- others move up), and it is told in that process instead of by a message. Waiters of other
-- processes that take a handover (their field is in the grant hash, with the TTL the lock gets:
-- min(their lease, their wait), so a dead one holds the line for its wait at most) get it the same
-- way, told by grant_message on their channel. A Redisson client is never in the grant hash and
-- is told with the unlock message, as Redisson's own release tells it. So is a waiter dropped for
-- its deadline while its process may live: it looks again and queues. Every way out saves the lag
-- (fair_lag.lua).
--
-- KEYS[1] lock_key         the lock, Redisson's hash
-- KEYS[2] queue_key        "redisson_lock_queue:{<name>}"
-- KEYS[3] deadlines_key    "redisson_lock_timeout:{<name>}"
-- KEYS[4] channel_prefix   "redisson_lock__channel:{<name>}"
-- KEYS[5] alive_key        the processes' marks (fair_alive.lua)
-- KEYS[6] grant_key        the grant hash (fair_queue.lua)
-- KEYS[7] lag_key          the lag hash (fair_lag.lua)
-- ARGV[1] unlock_message   "0"
-- ARGV[2] lease_ms         the lease
-- ARGV[3] field            "<instance-id>:<owner>"
-- ARGV[4] now              unix ms
-- ARGV[5] handover_prefix  "<instance-id>:" of the releasing process ('': none)
-- ARGV[6] handover_lease   the lease, ms, of a lock handed over to a waiter of this process
-- ARGV[7] thread_wait      how far, ms, the others move up when the lock is handed over
-- ARGV[8] grant_message    tells a waiter of another process it was handed the lock
-- ARGV[9] lag_cap          the lag written out past this, ms (fair_lag.lua)
--
-- Returns nil when the field is not there (not held by this owner); else {0, ''} when still held
-- (nested), {1, first} when deleted and the first waiter (its field, '' if none) told, {2, first}
-- when handed over to a waiter of this process, {3, first} to a waiter of another process.
local lock_key = KEYS[1]
local queue_key = KEYS[2]
local deadlines_key = KEYS[3]
local channel_prefix = KEYS[4]
local alive_key = KEYS[5]
local grant_key = KEYS[6]
local lag_key = KEYS[7]
local unlock_message = ARGV[1]
local lease_ms = ARGV[2]
local field = ARGV[3]
local now = tonumber(ARGV[4])
local handover_prefix = ARGV[5] or ''
local handover_lease = ARGV[6]
local thread_wait = tonumber(ARGV[7])
local grant_message = ARGV[8]
local lag_cap = tonumber(ARGV[9])
--! include release_hold.lua
--! include fair_queue.lua
--! include publish.lua

for _, missed in ipairs(drop_dead_waiters()) do
  publish(channel_prefix .. ':' .. missed, unlock_message)
end
local released = release_hold(lock_key, field, lease_ms)
if released == nil then
  -- Not ours (it expired, or was never taken). If the lock is free, wake the first waiter anyway,
  -- so the line does not wait for a release that will never come.
  if head ~= false and redis.call('exists', lock_key) == 0 then
    publish(channel_prefix .. ':' .. head, unlock_message)
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
-- Taken for the first waiter, exactly as its own acquire would take it, when it waits here or is
-- listed in the grant hash (looked up only for a waiter elsewhere).
if handover_prefix ~= '' and string.sub(first, 1, #handover_prefix) == handover_prefix then
  take_lock(first, thread_wait, handover_lease)
  return {2, first}
end
local ttl = redis.call('hget', grant_key, first)
if ttl then
  take_lock(first, thread_wait, ttl)
  publish(channel_prefix .. ':' .. first, grant_message)
  return {3, first}
end
save_lag()
publish(channel_prefix .. ':' .. first, unlock_message)
return {1, first}
