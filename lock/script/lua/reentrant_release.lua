-- Redisson RLock release (RedissonLock.unlockInnerAsync): one hold given back; when the lock is
-- deleted, tell the waiters on the unlock channel.
--
-- KEYS[1] lock_key        the lock, Redisson's hash
-- KEYS[2] unlock_channel  "redisson_lock__channel:{<name>}"
-- ARGV[1] unlock_message  "0" (LockPubSub.UNLOCK_MESSAGE)
-- ARGV[2] lease_ms        the lease
-- ARGV[3] field           "<instance-id>:<owner>"
--
-- Returns nil when the field is not there (not held by this owner), 0 when still held (nested),
-- 1 when deleted and published.
local lock_key = KEYS[1]
local unlock_channel = KEYS[2]
local unlock_message = ARGV[1]
local lease_ms = ARGV[2]
local field = ARGV[3]
--! include release_hold.lua
--! include publish.lua

local released = release_hold(lock_key, field, lease_ms)
if released == 1 then
  publish(unlock_channel, unlock_message)
end
return released
