-- Take a fenced lock: SET NX PX and, only when that took the lock, INCR the token counter in the
-- same script, so every acquisition gets its own strictly increasing token and no token is ever
-- handed to two holders or skipped by a failed attempt (Redisson RFencedLock; Kleppmann).
-- KEYS[1] lock key, KEYS[2] token counter (same hash slot); ARGV[1] holder's value, ARGV[2] lease ms.
-- Returns {token, 0} when acquired; {0, pttl} when someone else holds the lock (pttl -1: no TTL),
-- so a waiter knows when the lock is free at the latest.
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {redis.call('incr', KEYS[2]), 0}
end
return {0, redis.call('pttl', KEYS[1])}
