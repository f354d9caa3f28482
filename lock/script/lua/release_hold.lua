-- release_hold.lua, an include: Redisson's RLock release of one hold (RedissonLock.unlockInnerAsync)
-- up to its unlock message, for the scripts that release the reentrant and the fair lock
-- (reentrant_release.lua, rlock_release.lua, fair_release.lua).
--! requires (nothing)
--! defines release_hold

-- release_hold decrements field's hold count on key; while it is above 0 it re-arms the lease,
-- at 0 it deletes the lock. The count is read once (HGET), and the hash ends as Redisson's
-- HEXISTS + HINCRBY leave it. Returns nil when field has no count (not held by this owner), 0
-- when still held (nested), 1 when the lock is deleted.
local function release_hold(key, field, lease_ms)
  local holds = redis.call('hget', key, field)
  if holds == false then
    return nil
  end
  if tonumber(holds) > 1 then
    redis.call('hincrby', key, field, -1)
    redis.call('pexpire', key, lease_ms)
    return 0
  end
  redis.call('del', key)
  return 1
end
