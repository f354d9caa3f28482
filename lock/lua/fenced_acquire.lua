-- Take a fenced lock: SET NX PX and, only when that took the lock, INCR the token counter in the
-- same script, so every acquisition gets its own strictly increasing token and no token is ever
-- handed to two holders or skipped by a failed attempt (Redisson RFencedLock; Kleppmann).
-- KEYS[1] lock key, KEYS[2] token counter (same hash slot); ARGV[1] holder's value, ARGV[2] lease ms.
-- Returns the new token when acquired, 0 when someone else holds the lock.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return 0
