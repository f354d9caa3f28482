-- Fair lock release (RedissonFairLock.unlockInnerAsync): as the reentrant release, but the
-- wake-up goes only to the first waiter in line, on its own channel
-- "redisson_lock__channel:{<name>}:<field>". Dead waiters at the head are dropped first.
-- KEYS[1] lock name; KEYS[2] queue; KEYS[3] deadlines; KEYS[4] channel prefix
-- "redisson_lock__channel:{<name>}"; ARGV[1] unlock message ("0"); ARGV[2] lease in ms;
-- ARGV[3] field "<instance-id>:<owner>"; ARGV[4] now, unix ms.
-- Returns nil when the field is not there (not held by this owner); else {0, ''} when still held
-- (nested), {1, first} when deleted and the first waiter (its field, '' if none) told.
-- fair_drop_dead.lua runs before this.

if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  -- Not ours (it expired, or was never taken). If the lock is free, wake the first waiter anyway,
  -- so the line does not wait for a release that will never come.
  if redis.call('exists', KEYS[1]) == 0 then
    local first = redis.call('lindex', KEYS[2], 0)
    if first ~= false then
      redis.call('publish', KEYS[4] .. ':' .. first, ARGV[1])
    end
  end
  return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {0, ''}
end
redis.call('del', KEYS[1])
local first = redis.call('lindex', KEYS[2], 0)
if first == false then
  return {1, ''}
end
redis.call('publish', KEYS[4] .. ':' .. first, ARGV[1])
return {1, first}
