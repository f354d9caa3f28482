-- Release a lock only if it still holds our value (the release script of https://redis.io/docs/latest/develop/use/patterns/distributed-locks/), and tell
-- the waiters: the PUBLISH wakes the head of each process's line of waiters at once instead of
-- leaving the lock idle until their next poll. Nothing is published when the lock was not ours
-- (it is someone else's now, and still held).
-- KEYS[1] lock key, KEYS[2] its release channel; ARGV[1] the holder's value, ARGV[2] the message.
-- Returns 1 when deleted, 0 when not ours.
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[2])
  return 1
end
return 0
