
-- This process was nominated but none of its waiters is left, or its last waiter gave up: it
-- leaves the line and, when the lock is free, the next process is nominated (with a fresh unlock
-- message where a Redisson client listens, which takes it as one more release).
redis.call('lrem', KEYS[3], 0, ARGV[2])
redis.call('hdel', KEYS[4], ARGV[2])
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
nominate()
return 1
