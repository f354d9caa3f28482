-- Redisson watchdog renewal (RedissonBaseLock.renewExpirationAsync), for the reentrant and the
-- fair lock: push the expiry out again, but only while our field is still in the hash, so a lock
-- that was lost is never revived.
--
-- KEYS[1] lock_key  the lock, Redisson's hash
-- ARGV[1] lease_ms  the lease
-- ARGV[2] field     "<instance-id>:<owner>"
--
-- Returns 1 when renewed, 0 when the lock is no longer ours.
local lock_key = KEYS[1]
local lease_ms = ARGV[1]
local field = ARGV[2]

if (redis.call('hexists', lock_key, field) == 1) then
  redis.call('pexpire', lock_key, lease_ms)
  return 1
end
return 0
