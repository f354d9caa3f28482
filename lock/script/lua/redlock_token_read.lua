-- Redlock fencing, first round, on one master: the token counter, read only where this
-- acquisition still holds the lock.
-- KEYS[1] lock key, KEYS[2] token counter (same hash slot); ARGV[1] the acquisition's value.
-- Returns the counter (0 when it was never written), or -1 when the lock here is not ours.
if redis.call('get', KEYS[1]) ~= ARGV[1] then
  return -1
end
return tonumber(redis.call('get', KEYS[2]) or '0')
