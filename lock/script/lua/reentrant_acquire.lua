-- Redisson RLock acquire (RedissonLock.tryLockInnerAsync, take_hold.lua): take the lock when
-- nobody holds it or re-enter when we already do; otherwise answer how long the current holder
-- still has.
--
-- KEYS[1] lock_key  the lock, Redisson's hash
-- ARGV[1] lease_ms  the lease
-- ARGV[2] field     "<instance-id>:<owner>"
--
-- Returns nil when held by us now, else the lock's PTTL in ms.
local lock_key = KEYS[1]
local lease_ms = ARGV[1]
local field = ARGV[2]
--! include take_hold.lua

if take_hold(lock_key, field, lease_ms) then
  return nil
end
return redis.call('pttl', lock_key)
