-- Redisson's read-lock watchdog round (renewal/ReadLockTask): while the owner's field is in the
-- hash, push out the hash and every one of the owner's timeout keys by the lease.
--
-- KEYS[1] lock_key    the lock, Redisson's hash
-- KEYS[2] key_prefix  "{<name>}", the start of the owner's timeout keys
-- ARGV[1] lease_ms    the lease
-- ARGV[2] field       "<instance-id>:<owner>"
--
-- Returns 1 when renewed, 0 when the owner holds no read any more.
local lock_key = KEYS[1]
local key_prefix = KEYS[2]
local lease_ms = ARGV[1]
local field = ARGV[2]

local holds = redis.call('hget', lock_key, field)
if holds == false then
  return 0
end
for i = tonumber(holds), 1, -1 do
  redis.call('pexpire', key_prefix .. ':' .. field .. ':rwlock_timeout:' .. i, lease_ms)
end
redis.call('pexpire', lock_key, lease_ms)
return 1
