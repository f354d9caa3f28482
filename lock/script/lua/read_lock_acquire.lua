-- Redisson's RReadWriteLock, one read hold (RedissonReadLock.tryLockInnerAsync). The lock is one
-- hash: its field "mode" says "read" or "write", and each owner has a field with its hold count.
-- Each read hold also has a key of its own, "<timeout_prefix>:<n>" for the owner's n-th hold,
-- that lives for the lease: the releases read them to tell live readers from dead ones. A read is
-- taken when nobody holds the lock, when it is in read mode, or when this owner holds the write
-- side (a downgrade).
--
-- KEYS[1] lock_key        the lock, Redisson's hash
-- KEYS[2] timeout_prefix  "{<name>}:<instance-id>:<owner>:rwlock_timeout"
-- ARGV[1] lease_ms        the lease
-- ARGV[2] field           "<instance-id>:<owner>"
-- ARGV[3] write_field     "<instance-id>:<owner>:write"
--
-- Returns nil when held by us now, else the lock's PTTL in ms.
local lock_key = KEYS[1]
local timeout_prefix = KEYS[2]
local lease_ms = tonumber(ARGV[1])
local field = ARGV[2]
local write_field = ARGV[3]

local mode = redis.call('hget', lock_key, 'mode')
local ours = mode == 'write' and redis.call('hexists', lock_key, write_field) == 1
if mode ~= false and mode ~= 'read' and not ours then
  return redis.call('pttl', lock_key)
end
if mode == false then
  redis.call('hset', lock_key, 'mode', 'read')
end
local holds = redis.call('hincrby', lock_key, field, 1)
redis.call('set', timeout_prefix .. ':' .. holds, 1, 'px', lease_ms)
-- A new hash has no TTL yet (PTTL -1); a held one keeps the longer of the two.
redis.call('pexpire', lock_key, math.max(redis.call('pttl', lock_key), lease_ms))
return nil
