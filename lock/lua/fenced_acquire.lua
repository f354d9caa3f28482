-- Take a fenced lock in the layout of Redisson's RFencedLock: the lock is a hash whose one field
-- (this acquisition's "<instance-id>:<id>") holds 1, as RLock's; the token counter is
-- "redisson_lock_token:{<name>}", and INCR of it runs in the same script as the take, only when
-- the take succeeded, so every acquisition gets its own strictly increasing token, no token is
-- handed to two holders and a failed attempt skips none (Kleppmann). A Java RFencedLock on the
-- same name draws from the same counter. Each acquisition is a new field: the fenced mode never
-- re-enters (Redisson's does, with a new token each time).
-- The counter before this layout was "<name>:token": when it is there (KEYS[3]), the new counter
-- starts from it and it is deleted, so tokens never go back across the upgrade.
-- KEYS[1] lock name, KEYS[2] token counter, KEYS[3] (optional) the old counter, all in one slot;
-- ARGV[1] field, ARGV[2] lease ms.
-- Returns {token, 0} when acquired; {0, pttl} when someone else holds the lock (pttl -1: no TTL),
-- so a waiter knows when the lock is free at the latest.
if redis.call('exists', KEYS[1]) == 0 then
  if KEYS[3] then
    local old = tonumber(redis.call('get', KEYS[3]) or '0')
    if old > tonumber(redis.call('get', KEYS[2]) or '0') then
      redis.call('set', KEYS[2], old)
    end
    redis.call('del', KEYS[3])
  end
  redis.call('hset', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {redis.call('incr', KEYS[2]), 0}
end
return {0, redis.call('pttl', KEYS[1])}
