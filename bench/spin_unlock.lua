-- A classic Jedis lock's unLock: delete the lock only while it still holds our value.
-- KEYS[1] lock key; ARGV[1] the holder's value. Returns 1 when deleted, 0 when not ours.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
