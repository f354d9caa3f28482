-- Redisson's RLock release of one hold (RedissonLock.unlockInnerAsync) up to its unlock message,
-- prepended to the scripts that release the reentrant and the fair lock (reentrant_release.lua,
-- rlock_release.lua, fair_release.lua): decrement field's hold count on key; while it is above 0
-- re-arm the lease, at 0 delete the lock. The count is read once (HGET), and the hash ends as
-- Redisson's HEXISTS + HINCRBY leave it. Returns nil when field has no count (not held by this
-- owner), 0 when still held (nested), 1 when the lock is deleted.
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

