-- take_hold.lua, an include: Redisson's RLock acquire of one hold (RedissonLock.tryLockInnerAsync)
-- up to its reply, for the scripts that take a lock in Redisson's hash layout (reentrant_acquire.lua,
-- rlock_acquire.lua, rfenced_acquire.lua). The lock is a hash whose one field
-- "<instance-id>:<owner>" holds the hold count.
--! requires (nothing)
--! defines take_hold

-- take_hold takes one hold of key for field when nobody holds it or field does (a re-entry): the
-- count goes up by one and the lease is re-armed. It reports whether it took it.
local function take_hold(key, field, lease_ms)
  if redis.call('exists', key) == 1 and redis.call('hexists', key, field) == 0 then
    return false
  end
  redis.call('hincrby', key, field, 1)
  redis.call('pexpire', key, lease_ms)
  return true
end
