-- Redisson RLock acquire (RedissonLock.tryLockInnerAsync): the lock is a hash whose one field
-- "<client-id>:<owner>" holds the hold count. Take it when nobody holds it or re-enter when we
-- already do; otherwise answer how long the current holder still has.
-- KEYS[1] lock name; ARGV[1] lease in ms; ARGV[2] field "<instance-id>:<owner>".
-- Returns nil when held by us now, else the lock's PTTL in ms.
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
