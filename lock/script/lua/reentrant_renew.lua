-- Redisson watchdog renewal (RedissonBaseLock.renewExpirationAsync): push the expiry out again,
-- but only while our field is still in the hash, so a lock that was lost is never revived.
-- KEYS[1] lock name; ARGV[1] lease in ms; ARGV[2] field "<instance-id>:<owner>".
-- Returns 1 when renewed, 0 when the lock is no longer ours.
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
