-- The watchdog renewal of a string lock (NewLua, NewFenced): push the expiry out only while the
-- key still holds our value, so a holder whose lock expired (and was taken by someone else) never
-- extends the new holder's lock.
--
-- KEYS[1] lock_key  the lock, a string holding its holder's value
-- ARGV[1] value     the holder's value
-- ARGV[2] lease_ms  the lease
--
-- Returns 1 when renewed, 0 when not ours.
local lock_key = KEYS[1]
local value = ARGV[1]
local lease_ms = ARGV[2]

if redis.call('get', lock_key) == value then
  return redis.call('pexpire', lock_key, lease_ms)
end
return 0
