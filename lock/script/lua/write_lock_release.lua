-- Redisson's RReadWriteLock, one write hold given back (RedissonWriteLock.unlockInnerAsync). The
-- last one deletes the lock, or, when the owner still holds read holds (a downgrade), leaves it
-- in read mode. Either way the waiters are told with Redisson's read-unlock message, on which
-- every waiting reader may go; Redisson publishes it only on the delete.
--
-- KEYS[1] lock_key             the lock, Redisson's hash
-- KEYS[2] unlock_channel       "redisson_rwlock:{<name>}"
-- ARGV[1] read_unlock_message  "1" (LockPubSub.READ_UNLOCK_MESSAGE)
-- ARGV[2] lease_ms             the lease
-- ARGV[3] write_field          "<instance-id>:<owner>:write"
--
-- Returns nil when the owner holds no write (not ours), 0 when still held (nested), 1 when the
-- write side is free and published.
local lock_key = KEYS[1]
local unlock_channel = KEYS[2]
local read_unlock_message = ARGV[1]
local lease_ms = ARGV[2]
local write_field = ARGV[3]
--! include publish.lua

local mode = redis.call('hget', lock_key, 'mode')
if mode == false then
  -- The lock is gone already: wake whoever still waits for it, as Redisson does.
  publish(unlock_channel, read_unlock_message)
  return nil
end
local holds = redis.call('hget', lock_key, write_field)
if mode ~= 'write' or holds == false then
  return nil
end
if tonumber(holds) > 1 then
  redis.call('hincrby', lock_key, write_field, -1)
  redis.call('pexpire', lock_key, lease_ms)
  return 0
end
redis.call('hdel', lock_key, write_field)
if redis.call('hlen', lock_key) == 1 then
  redis.call('del', lock_key)
else
  redis.call('hset', lock_key, 'mode', 'read')
end
publish(unlock_channel, read_unlock_message)
return 1
