-- Redlock fencing, second round, on one master (NewRedlock with WithFencingTokens): raise the
-- token counter to the new token, only where this acquisition still holds the lock (a counter
-- never goes down).
--
-- KEYS[1] lock_key     the lock on this master
-- KEYS[2] counter_key  its token counter (same hash slot)
-- ARGV[1] value        the acquisition's value
-- ARGV[2] token        the token, the highest counter of the first round plus one
--
-- Returns 1 when raised (or already as high), 0 when the lock here is not ours.
local lock_key = KEYS[1]
local counter_key = KEYS[2]
local value = ARGV[1]
local token = tonumber(ARGV[2])

if redis.call('get', lock_key) ~= value then
  return 0
end
if tonumber(redis.call('get', counter_key) or '0') < token then
  redis.call('set', counter_key, token)
end
return 1
