-- Redlock fencing, first round, on one master (NewRedlock with WithFencingTokens): the token
-- counter, read only where this acquisition still holds the lock.
--
-- KEYS[1] lock_key     the lock on this master
-- KEYS[2] counter_key  its token counter (same hash slot)
-- ARGV[1] value        the acquisition's value
--
-- Returns the counter (0 when it was never written), or -1 when the lock here is not ours.
local lock_key = KEYS[1]
local counter_key = KEYS[2]
local value = ARGV[1]

if redis.call('get', lock_key) ~= value then
  return -1
end
return tonumber(redis.call('get', counter_key) or '0')
