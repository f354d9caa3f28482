-- Release a fenced lock (RFencedLock's layout, fenced_acquire.lua) only while it is still ours,
-- and tell the waiters with Redisson's unlock message, so Java RFencedLock waiters wake as well.
-- KEYS[1] lock name, KEYS[2] its release channel "redisson_lock__channel:{<name>}"; ARGV[1] our
-- field, ARGV[2] the message ("0").
-- Returns 1 when deleted, 0 when not ours (it expired, or another holder has it now).
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[2])
  return 1
end
return 0
