-- Redisson RLock acquire (RedissonLock.tryLockInnerAsync): the lock is a hash whose one field
-- "<instance-id>:<owner>" holds the hold count. Take it when nobody holds it or re-enter when we
-- already do; otherwise answer how long the current holder still has.
--
-- KEYS[1] lock_key  the lock, Redisson's hash
-- ARGV[1] lease_ms  the lease
-- ARGV[2] field     "<instance-id>:<owner>"
--
-- Returns nil when held by us now, else the lock's PTTL in ms.
local lock_key = KEYS[1]
local lease_ms = ARGV[1]
local field = ARGV[2]

if (redis.call('exists', lock_key) == 0) or (redis.call('hexists', lock_key, field) == 1) then
  redis.call('hincrby', lock_key, field, 1)
  redis.call('pexpire', lock_key, lease_ms)
  return nil
end
return redis.call('pttl', lock_key)
