-- take_hold.lua, an include: Redisson's RLock acquire of one hold (RedissonLock.tryLockInnerAsync)
-- up to its reply, for the scripts that take a lock in Redisson's hash layout (reentrant_acquire.lua,
-- rlock_acquire.lua, rfenced_acquire.lua). The lock is a hash whose one field
-- "<instance-id>:<owner>" holds the hold count.
--! requires (nothing)
--! defines may_take, take_hold

-- may_take says whether field may take key: nobody holds it, or field does (a re-entry).
local function may_take(key, field)
  return redis.call('exists', key) == 0 or redis.call('hexists', key, field) == 1
end

-- take_hold counts one more hold of field on key and re-arms the lease.
local function take_hold(key, field, lease_ms)
  redis.call('hincrby', key, field, 1)
  redis.call('pexpire', key, lease_ms)
end
