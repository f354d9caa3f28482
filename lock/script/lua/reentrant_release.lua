-- Redisson RLock release (RedissonLock.unlockInnerAsync): one hold given back (release_hold.lua);
-- when the lock is deleted, tell the waiters on the unlock channel.
-- KEYS[1] lock name; KEYS[2] unlock channel "redisson_lock__channel:{<name>}";
-- ARGV[1] unlock message ("0", LockPubSub.UNLOCK_MESSAGE); ARGV[2] lease in ms;
-- ARGV[3] field "<instance-id>:<owner>".
-- Returns nil when the field is not there (not held by this owner), 0 when still held (nested),
-- 1 when deleted and published.
local released = release_hold(KEYS[1], ARGV[3], ARGV[2])
if released == 1 then
  redis.call('publish', KEYS[2], ARGV[1])
end
return released
