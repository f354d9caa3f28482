-- Redisson RLock release (RedissonLock.unlockInnerAsync): decrement our hold count; while it is
-- above 0 re-arm the lease, at 0 delete the lock and tell the waiters on the unlock channel.
-- KEYS[1] lock name; KEYS[2] unlock channel "redisson_lock__channel:{<name>}";
-- ARGV[1] unlock message ("0", LockPubSub.UNLOCK_MESSAGE); ARGV[2] lease in ms;
-- ARGV[3] field "<instance-id>:<owner>".
-- Returns nil when the field is not there (not held by this owner), 0 when still held (nested),
-- 1 when deleted and published.
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
