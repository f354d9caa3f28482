-- Redisson's RReadWriteLock, one write hold (RedissonWriteLock.tryLockInnerAsync): taken when
-- nobody holds the lock, or re-entered by the owner that holds the write side. Unlike Redisson,
-- an owner that holds only the read side is refused at once: it would wait for itself forever.
--
-- KEYS[1] lock_key     the lock, Redisson's hash
-- ARGV[1] lease_ms     the lease
-- ARGV[2] write_field  "<instance-id>:<owner>:write"
-- ARGV[3] read_field   "<instance-id>:<owner>"
--
-- Returns nil when held by us now, -3 when the owner holds the read side (an upgrade, refused;
-- nothing written), else the lock's PTTL in ms.
local lock_key = KEYS[1]
local lease_ms = tonumber(ARGV[1])
local write_field = ARGV[2]
local read_field = ARGV[3]

local mode = redis.call('hget', lock_key, 'mode')
if mode == false then
  redis.call('hset', lock_key, 'mode', 'write')
  redis.call('hset', lock_key, write_field, 1)
  redis.call('pexpire', lock_key, lease_ms)
  return nil
end
if mode == 'write' and redis.call('hexists', lock_key, write_field) == 1 then
  redis.call('hincrby', lock_key, write_field, 1)
  -- Redisson adds the lease to what is left rather than re-arming it.
  redis.call('pexpire', lock_key, redis.call('pttl', lock_key) + lease_ms)
  return nil
end
if redis.call('hexists', lock_key, read_field) == 1 then
  return -3
end
return redis.call('pttl', lock_key)
